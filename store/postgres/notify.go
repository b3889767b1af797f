package postgres

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/rotahq/rota/internal/backoff"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/fanout"
)

// Notifications travel on two channels per schema, so that two rota schemas in one database do
// not wake each other: "<schema>.insert", whose payload is a queue name, and "<schema>.final",
// whose payload is "id,id,...;queue": jobs of one queue that reached a final state, up to 250
// per NOTIFY. The NOTIFYs of Insert carry the inserting Store's origin before the queue,
// "~<origin> <queue>", because that Store announced them to its own subscribers already (see
// announceLocally): its listener drops them instead of waking its nodes a second time for
// nothing. Other insert notifications (retries, resumed queues, rescued jobs) are the bare
// queue name.

const (
	// subscriberBuffer is how many notifications a subscriber may lag behind before it gets
	// the look-again pair in their place (fanout.Missed). One NOTIFY of a completion batch
	// carries up to 300 final jobs, so the buffer holds several batches.
	subscriberBuffer = 4096
)

// reconnectBackoff spaces the listener's reconnects while the database is unreachable: from
// 100 ms, doubling, capped at 10 s, jittered so that nodes cut off together do not reconnect in
// lockstep.
var reconnectBackoff = backoff.Policy{Base: 100 * time.Millisecond, Max: 10 * time.Second}

// channelName is the NOTIFY channel of topic in schema. Channel names are identifiers, at most 63
// bytes: a longer schema name is cut and made unique again with its hash.
func channelName(schema, topic string) string {
	name := schema + "." + topic
	if len(name) <= maxIdentifierLen {
		return name
	}
	h := fnv.New32a()
	h.Write([]byte(schema))
	prefix := schema[:maxIdentifierLen-len(topic)-10]
	for !utf8.ValidString(prefix) {
		prefix = prefix[:len(prefix)-1]
	}
	return fmt.Sprintf("%s~%08x.%s", prefix, h.Sum32(), topic)
}

// Subscribe delivers insert and final notifications until ctx ends or the store is closed, when
// the channel is closed. The first subscription starts the store's one listening connection and
// returns once it listens (or its first attempt failed: it then keeps retrying with backoff), so
// that anything committed after Subscribe returns is delivered. With WithPollOnly the channel
// delivers nothing.
func (s *Store) Subscribe(ctx context.Context) (<-chan store.Notification, error) {
	ch, err := s.listener.Subscribe(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: subscribe: %w", unavailable(err))
	}
	return ch, nil
}

// listener holds the Store's one LISTEN connection, reconnects it with backoff when it breaks,
// and hands notifications to the subscribers through its hub.
type listener struct {
	*fanout.Listener
	s *Store

	// onListen, when set (by tests, before the first Subscribe), is called with the backend pid
	// of the connection each time it starts listening.
	onListen func(pid uint32)
}

func newListener(s *Store) *listener {
	l := &listener{s: s}
	l.Listener = fanout.NewListener(subscriberBuffer, s.cfg.pollOnly, l.run)
	return l
}

// run keeps a listening connection until ctx ends.
func (l *listener) run(ctx context.Context, markReady func()) {
	// failures counts the connections refused or lost since one last listened. The first retry
	// is immediate: a killed connection is usually replaceable at once.
	failures := 0
	missed := false // a connection was lost or refused since the last one listened
	for {
		err := l.session(ctx, func() {
			markReady()
			failures = 0
			if missed {
				// NOTIFYs sent while nobody listened are gone: subscribers look again, every
				// queue (a TopicInsert naming none) and every job they wait for.
				missed = false
				l.Hub().Publish(fanout.Missed[:])
			}
		})
		missed = true
		markReady()
		if ctx.Err() != nil {
			return
		}
		var delay time.Duration
		if failures > 0 {
			delay = reconnectBackoff.Delay(failures)
		}
		failures++
		l.s.cfg.logger.Warn("rota: postgres listener disconnected", "schema", l.s.cfg.schema,
			"err", err, "retry_in", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// session listens on one connection until it breaks or ctx ends.
func (l *listener) session(ctx context.Context, listening func()) error {
	cfg := l.s.pool.Config().ConnConfig
	cfg.RuntimeParams["application_name"] = "rota listener (" + l.s.cfg.schema + ")"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		conn.Close(closeCtx)
	}()
	for _, ch := range []string{l.s.insertChannel, l.s.finalChannel} {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return fmt.Errorf("listen: %w", err)
		}
	}
	listening()
	if l.onListen != nil {
		l.onListen(conn.PgConn().PID())
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		l.dispatch(n)
	}
}

func (l *listener) dispatch(n *pgconn.Notification) {
	var out []store.Notification
	switch n.Channel {
	case l.s.insertChannel:
		origin, queue := parseInsertPayload(n.Payload)
		if origin == l.s.origin {
			return // announced to this Store's subscribers when the insert returned
		}
		out = append(out, store.Notification{Topic: store.TopicInsert, Queue: queue})
	case l.s.finalChannel:
		ids, queue, _ := strings.Cut(n.Payload, ";")
		for field := range strings.SplitSeq(ids, ",") {
			id, err := strconv.ParseInt(field, 10, 64)
			if err != nil {
				l.s.cfg.logger.Warn("rota: bad final notification", "payload", n.Payload)
				return
			}
			out = append(out, store.Notification{Topic: store.TopicFinal, Queue: queue, JobID: id})
		}
	default:
		return
	}
	l.Hub().Publish(out)
}

// parseInsertPayload splits an insert notification into the origin of the Store that sent it
// ("" when none did: see the channels above) and the queue. Queue names valid for a Client start
// with a letter or digit, so a leading "~" is never part of one.
func parseInsertPayload(p string) (origin, queue string) {
	if rest, ok := strings.CutPrefix(p, "~"); ok {
		if origin, queue, ok = strings.Cut(rest, " "); ok {
			return origin, queue
		}
	}
	return "", p
}

// announceLocally wakes this Store's own subscribers for the queues that inserts through it made
// work available in, at once. The NOTIFY the gate lets through, or sends at the end of its
// interval, is for other processes; a node in this process need not wait for it, nor for the
// round trip through the server. Calls with WithPollOnly announce nothing.
func (s *Store) announceLocally(res []store.InsertResult) {
	if s.cfg.pollOnly {
		return
	}
	var notes []store.Notification
	seen := make(map[string]bool)
	for _, r := range res {
		if r.Job != nil && !r.Duplicate && r.Job.State == store.StateAvailable && !seen[r.Job.Queue] {
			seen[r.Job.Queue] = true
			notes = append(notes, store.Notification{Topic: store.TopicInsert, Queue: r.Job.Queue})
		}
	}
	if len(notes) > 0 {
		s.listener.Hub().Publish(notes)
	}
}

// notifyLater sends the NOTIFYs the gate owes, in a statement of their own.
func (s *Store) notifyLater(queues []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.pool.Exec(ctx, s.sql(`SELECT pg_notify({insert_channel}, {origin} || q) FROM unnest($1::text[]) q`), queues)
	if err != nil {
		s.cfg.logger.Warn("rota: postgres notify failed", "queues", queues, "err", err)
	}
}

// finalNotify is a scalar SQL expression that NOTIFYs the ids of the rows of cte (which has
// columns id, state and queue) that are in a final state, up to 250 ids of one queue per NOTIFY.
// A payload holds at most 8000 bytes: 250 ids of up to 19 digits take 5000, and the queue name
// is cut to 1000.
func finalNotify(cte string) string {
	return `(SELECT count(pg_notify({final_channel}, ids || ';' || left(queue, 1000))) FROM (
		SELECT queue, string_agg(id::text, ',') AS ids FROM (
			SELECT id, queue, (row_number() OVER (PARTITION BY queue)) / 250 AS chunk FROM ` + cte + `
			WHERE state IN ` + finalStatesSQL + `) f
		GROUP BY queue, chunk) c)`
}

// notifyIfFinal is a RETURNING item that NOTIFYs the id of the returned row when its state is
// final, for statements that finish few jobs (expiry, rescue, cancel). A data-modifying CTE
// always runs to completion, RETURNING list included, even when nothing reads its output.
var notifyIfFinal = `CASE WHEN state IN ` + finalStatesSQL + `
	THEN pg_notify({final_channel}, id::text || ';' || left(queue, 1000))::text END AS notified`
