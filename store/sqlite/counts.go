package sqlite

import "github.com/rotahq/rota/store"

// counts is a change to queue_counts, gathered over a statement or a request and written by
// flush: one upsert per queue and state touched, not one per job. Every statement that changes
// the state of jobs, creates or deletes them records it here, in the same transaction, so that
// QueueStats can read the counts instead of counting the table.
type counts map[countKey]int64

type countKey struct {
	queue string
	state store.State
}

func (c counts) add(queue string, state store.State, n int64) {
	if n != 0 {
		c[countKey{queue, state}] += n
	}
}

func (c counts) move(queue string, from, to store.State, n int64) {
	if from != to {
		c.add(queue, from, -n)
		c.add(queue, to, n)
	}
}

func (c counts) flush(x execer) error {
	for k, n := range c {
		if n == 0 {
			continue
		}
		if _, err := x.exec(`INSERT INTO queue_counts (queue, state, n) VALUES (?, ?, ?)
			ON CONFLICT (queue, state) DO UPDATE SET n = n + excluded.n`, k.queue, string(k.state), n); err != nil {
			return err
		}
	}
	clear(c)
	return nil
}
