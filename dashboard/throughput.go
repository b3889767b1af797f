package dashboard

import (
	"context"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/internal/chanloop"
)

// window is how far back the throughput chart looks, one bar per minute.
const window = 60

// minute is one bar of the chart: attempts that ended in that minute on this node.
type minute struct {
	At        time.Time
	Completed int
	// Failed counts attempts that failed, whether the job will retry or was discarded.
	Failed int
}

// throughput counts this node's attempts per minute, from its events. It sees one node only:
// a fleet-wide figure needs every node's metrics (see package metrics).
type throughput struct {
	clock clockwork.Clock
	mu    sync.Mutex
	byMin map[int64]*minute // unix minute -> counts
}

func newThroughput(clock clockwork.Clock) *throughput {
	return &throughput{clock: clock, byMin: map[int64]*minute{}}
}

// run counts events until ctx ends or the channel closes.
func (t *throughput) run(ctx context.Context, events <-chan rota.Event) {
	chanloop.Each(ctx, events, t.record)
}

func (t *throughput) record(ev rota.Event) {
	var completed, failed int
	switch ev.Type {
	case rota.EventJobCompleted:
		completed = 1
	case rota.EventJobFailed, rota.EventJobDiscarded:
		failed = 1
	default:
		return
	}
	at := ev.At.Truncate(time.Minute)
	key := at.Unix() / 60
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.byMin[key]
	if m == nil {
		m = &minute{At: at}
		t.byMin[key] = m
		// Forget minutes that left the window, so the map stays at most an hour long.
		for k := range t.byMin {
			if k <= key-window {
				delete(t.byMin, k)
			}
		}
	}
	m.Completed += completed
	m.Failed += failed
}

// last returns the last window minutes, oldest first, empty minutes included.
func (t *throughput) last() []minute {
	end := t.clock.Now().Truncate(time.Minute)
	out := make([]minute, window)
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range out {
		at := end.Add(time.Duration(i-window+1) * time.Minute)
		out[i] = minute{At: at}
		if m := t.byMin[at.Unix()/60]; m != nil {
			out[i] = *m
		}
	}
	return out
}
