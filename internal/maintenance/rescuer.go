package maintenance

import (
	"context"
	"time"

	"github.com/rotahq/rota/store"
)

// RescueBatch bounds one rescue pass; a larger backlog is taken over the next passes.
const RescueBatch = 1000

// Rescuer returns jobs whose lease expired (their node died or lost the store) to their queue,
// or ends them as store.RescueState says. It runs on every node, not only the leader: a dead
// node's jobs then run again within the job lease and one interval, whichever node died. The
// store makes each rescue atomic, so nodes that rescue at once never rescue one job twice; a
// pass that finds nothing is one indexed read.
type Rescuer struct {
	Store interface {
		Rescue(ctx context.Context, max int) ([]*store.JobRow, error)
	}
	// Rescued is told of each job rescued, as it is now.
	Rescued func(*store.JobRow)
	Failed  Failed
}

// Service is the rescuer running every every.
func (r *Rescuer) Service(name string, every time.Duration) Service {
	return Service{Name: name, Every: every, Pass: r.pass}
}

func (r *Rescuer) pass(ctx context.Context) (int, error) {
	rows, err := r.Store.Rescue(ctx, RescueBatch)
	if err != nil {
		r.Failed(ctx, "rescue", err)
		return 0, err
	}
	for _, row := range rows {
		r.Rescued(row)
	}
	return len(rows), nil
}
