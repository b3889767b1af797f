package redis

import (
	"context"
	"fmt"
	"slices"

	"github.com/rotahq/rota/store"
)

// pruneChunk bounds the jobs one prune script deletes; Prune loops for more.
const pruneChunk = 1000

// Get returns one job, or store.ErrNotFound.
func (s *Store) Get(ctx context.Context, id int64) (*store.JobRow, error) {
	rows, err := s.getJobs(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("redis: get: %w", err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("redis: get: job %d: %w", id, store.ErrNotFound)
	}
	return rows[0], nil
}

// getJobs reads jobs by id in one round trip, leaving out those the store does not hold.
func (s *Store) getJobs(ctx context.Context, ids ...int64) ([]*store.JobRow, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	v, err := s.run(ctx, scriptGet, args...)
	if err != nil {
		return nil, err
	}
	return decodeJobs(v)
}

// statusRow reads the {status, row} replies of cancel and retry.
func (s *Store) statusRow(ctx context.Context, sc *script, id int64) (*store.JobRow, error) {
	v, err := s.run(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	r, _ := v.([]any)
	if len(r) == 0 {
		return nil, fmt.Errorf("redis: %s: unexpected reply %v", sc.name, v)
	}
	switch toStr(r[0]) {
	case "NOTFOUND":
		return nil, fmt.Errorf("redis: %s: job %d: %w", sc.name, id, store.ErrNotFound)
	case "RUNNING":
		return nil, fmt.Errorf("redis: %s: job %d: %w", sc.name, id, store.ErrJobRunning)
	}
	if len(r) < 2 {
		return nil, nil
	}
	j, err := decodeJob(r[1])
	if err != nil {
		return nil, fmt.Errorf("redis: %s: %w", sc.name, err)
	}
	return j, nil
}

// Cancel ends a job that is not running as cancelled, or records the request for a running one.
func (s *Store) Cancel(ctx context.Context, id int64) (*store.JobRow, error) {
	return s.statusRow(ctx, scriptCancel, id)
}

// Retry makes a job that is not running available now.
func (s *Store) Retry(ctx context.Context, id int64) (*store.JobRow, error) {
	return s.statusRow(ctx, scriptRetry, id)
}

// Delete removes a job that is not running, with its index entries and the key it holds.
func (s *Store) Delete(ctx context.Context, id int64) error {
	_, err := s.statusRow(ctx, scriptDelete, id)
	return err
}

// Prune deletes final jobs finalized before p.Before, oldest first, in scripts of pruneChunk.
func (s *Store) Prune(ctx context.Context, p store.PruneParams) (int, error) {
	var states []store.State
	for _, st := range p.States {
		if st.Final() && !slices.Contains(states, st) {
			states = append(states, st)
		}
	}
	if len(states) == 0 {
		return 0, nil
	}
	total := 0
	for p.Limit <= 0 || total < p.Limit {
		n := pruneChunk
		if p.Limit > 0 {
			n = min(n, p.Limit-total)
		}
		args := []any{micros(p.Before), n, len(states)}
		for _, st := range states {
			args = append(args, string(st))
		}
		v, err := s.run(ctx, scriptPrune, args...)
		if err != nil {
			return total, err
		}
		got := int(toInt(v))
		total += got
		if got < n {
			break
		}
	}
	return total, nil
}

// QueueStats counts jobs per state for every queue that has jobs or is paused, from the sizes
// of the (state, queue) index sets: one script, O(queues), never a scan of the jobs.
func (s *Store) QueueStats(ctx context.Context) ([]store.QueueStats, error) {
	v, err := s.run(ctx, scriptStats)
	if err != nil {
		return nil, err
	}
	list, _ := v.([]any)
	var out []store.QueueStats
	for _, x := range list {
		r, _ := x.([]any)
		if len(r) != 3+len(store.States) {
			return nil, fmt.Errorf("redis: queue stats: unexpected row %v", x)
		}
		q := store.QueueStats{Queue: toStr(r[0]), Paused: toInt(r[1]) == 1, Counts: make(map[store.State]int64)}
		var any int64
		for i, st := range luaStates {
			q.Counts[st] = toInt(r[2+i])
			any += q.Counts[st]
		}
		if any == 0 && !q.Paused {
			continue
		}
		if q.OldestAvailable, err = fromMicros(toStr(r[len(r)-1])); err != nil {
			return nil, fmt.Errorf("redis: queue stats: %w", err)
		}
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b store.QueueStats) int {
		if a.Queue < b.Queue {
			return -1
		}
		if a.Queue > b.Queue {
			return 1
		}
		return 0
	})
	return out, nil
}

// luaStates is the prelude's STATES, the order stats.lua counts in.
var luaStates = []store.State{
	store.StateAvailable, store.StateScheduled, store.StatePending, store.StateRunning, store.StateRetryable,
	store.StateCompleted, store.StateCancelled, store.StateDiscarded, store.StateExpired,
}

// QueueLoad counts one queue's available and running jobs and says whether it is paused.
func (s *Store) QueueLoad(ctx context.Context, queue string) (store.QueueStats, error) {
	v, err := s.run(ctx, scriptLoad, queue)
	if err != nil {
		return store.QueueStats{}, err
	}
	r, _ := v.([]any)
	if len(r) != 3 {
		return store.QueueStats{}, fmt.Errorf("redis: queue load: unexpected reply %v", v)
	}
	return store.QueueStats{Queue: queue, Paused: toInt(r[2]) == 1, Counts: map[store.State]int64{
		store.StateAvailable: toInt(r[0]), store.StateRunning: toInt(r[1]),
	}}, nil
}

// PauseQueue stops claims from queue, fleet-wide.
func (s *Store) PauseQueue(ctx context.Context, queue string) error {
	_, err := s.run(ctx, scriptPause, queue, "1")
	return err
}

// ResumeQueue lets claims take from queue again, and wakes its nodes.
func (s *Store) ResumeQueue(ctx context.Context, queue string) error {
	_, err := s.run(ctx, scriptPause, queue, "")
	return err
}
