package maintenance

import (
	"context"
	"time"
)

// Tidier lets a store do housekeeping of its own (store.Tidier: PostgreSQL vacuums the jobs
// table when its dead rows pile up). It runs on the leader.
type Tidier struct {
	Store interface {
		Tidy(ctx context.Context) error
	}
	Failed Failed
}

// Service is the tidier running every every.
func (t *Tidier) Service(name string, every time.Duration) Service {
	return Service{Name: name, Every: every, Pass: func(ctx context.Context) (int, error) {
		err := t.Store.Tidy(ctx)
		if err != nil {
			t.Failed(ctx, "tidy", err)
		}
		return 0, err
	}}
}

// Cron plans the occurrences of cron schedules (internal/planner's Pass: its store calls are
// the planner's). It runs on the leader.
type Cron struct {
	Plan   func(ctx context.Context) (int, error)
	Failed Failed
}

// Service is the planner running every every.
func (c *Cron) Service(name string, every time.Duration) Service {
	return Service{Name: name, Every: every, Pass: func(ctx context.Context) (int, error) {
		planned, err := c.Plan(ctx)
		if err != nil {
			c.Failed(ctx, "plan_schedules", err)
		}
		return planned, err
	}}
}
