package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotahq/rota/store"
)

// copyColumns are the columns a COPY fills; the others take their defaults.
var copyColumns = []string{
	"id", "kind", "queue", "args", "priority", "state", "max_attempts", "run_at", "expires_at",
	"tags", "metadata", "schedule", "created_at",
}

// copyPrepareSQL reserves $2 ids, reads the store's time, and NOTIFYs the queues $3, all in the
// COPY's transaction, so the NOTIFYs go out at its commit.
const copyPrepareSQL = `SELECT {now},
	ARRAY(SELECT nextval({jobs_id_seq}) FROM generate_series(1, $2::integer)),
	(SELECT count(pg_notify({insert_channel}, {origin} || q)) FROM unnest($3::text[]) q)`

// copyInsert inserts params[idx...], which have no unique keys, with COPY. The ids are reserved
// from the sequence first, so the rows are known without reading them back.
func (s *Store) copyInsert(ctx context.Context, q querier, copyFrom copyFunc, params []store.InsertParams,
	idx []int, out []store.InsertResult,
) error {
	notify := s.notifyNow(q, s.dueQueues(params, idx))
	rs, err := q.query(ctx, s.insertText(q, copyPrepareSQL), s.now(), len(idx), notify)
	if err != nil {
		return err
	}
	var (
		now      time.Time
		ids      []int64
		notified int64
	)
	if err := scanOne(rs, &now, &ids, &notified); err != nil {
		return fmt.Errorf("reserve ids: %w", err)
	}

	for k, i := range idx {
		out[i] = store.InsertResult{Job: newJob(params[i], ids[k], now)}
	}
	src := pgx.CopyFromSlice(len(idx), func(k int) ([]any, error) {
		j := out[idx[k]].Job
		tags := j.Tags
		if tags == nil {
			tags = []string{}
		}
		return []any{
			j.ID, j.Kind, j.Queue, []byte(j.Args), int32(j.Priority), string(j.State), int32(j.MaxAttempts),
			j.RunAt, ts(j.ExpiresAt), tags, []byte(j.Metadata), textParam(j.Schedule), j.CreatedAt,
		}, nil
	})
	n, err := copyFrom(ctx, pgx.Identifier{s.cfg.schema, "jobs"}, copyColumns, src)
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	if int(n) != len(idx) {
		return fmt.Errorf("copy: %d rows copied of %d", n, len(idx))
	}
	return nil
}
