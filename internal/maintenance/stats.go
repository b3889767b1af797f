package maintenance

import (
	"context"
	"time"

	"github.com/rotahq/rota/internal/fleetstats"
	"github.com/rotahq/rota/store"
)

// Stats adds a node's per-minute counts to the store, and once more when the node stops, after
// its last outcomes were recorded. Counts the store refused are kept for the next pass.
type Stats struct {
	Keeper interface {
		AddStats(ctx context.Context, rows []store.Stats) error
	}
	Counts *fleetstats.Counter
	Failed Failed
}

// Service is the stats writer running every every.
func (s *Stats) Service(name string, every time.Duration) Service {
	return Service{Name: name, Every: every, Pass: s.Pass, Last: func(ctx context.Context) {
		_, _ = s.Pass(ctx) // a failure is reported; nothing is left to retry it
	}}
}

// Pass adds the counts held and returns how many rows it wrote.
func (s *Stats) Pass(ctx context.Context) (int, error) {
	rows := s.Counts.Take()
	if len(rows) == 0 {
		return 0, nil
	}
	if err := s.Keeper.AddStats(ctx, rows); err != nil {
		s.Counts.Return(rows)
		s.Failed(ctx, "add_stats", err)
		return 0, err
	}
	return len(rows), nil
}
