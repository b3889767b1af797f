package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rotahq/rota/internal/backoff"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/internal/fanout"
)

// Notifications travel on one pub/sub channel per namespace, rota:{ns}:ev, published by the
// scripts after their writes. Payloads: "i <queue>" (jobs became available; "i ~<origin>
// <queue>" from an Insert, whose Store told its own subscribers already and drops the echo),
// and "f <id>,<id>,…" (jobs reached a final state, up to 300 per message). Inserts publish once
// per queue per call.

const (
	// subscriberBuffer is how many notifications a subscriber may lag behind before it gets
	// the look-again pair in their place (fanout.Missed).
	subscriberBuffer = 4096
	// pingEvery is how long the subscriber waits for a message before it pings, so a dead
	// connection is noticed (and replaced) within a few seconds.
	pingEvery = 3 * time.Second
)

// reconnectBackoff spaces the subscriber's reconnects while Redis is unreachable.
var reconnectBackoff = backoff.Policy{Base: 100 * time.Millisecond, Max: 10 * time.Second}

// Subscribe delivers insert and final notifications until ctx ends or the store is closed. The
// first subscription starts the store's one subscriber connection and returns once Redis has
// confirmed the SUBSCRIBE (or the first attempt failed: it keeps retrying), so that anything
// written after Subscribe returns is delivered. With WithPollOnly it delivers nothing.
func (s *Store) Subscribe(ctx context.Context) (<-chan store.Notification, error) {
	ch, err := s.listener.Subscribe(ctx)
	if err != nil {
		return nil, fmt.Errorf("redis: subscribe: %w", err)
	}
	return ch, nil
}

// listener holds the Store's one subscriber connection, which go-redis reconnects and
// resubscribes; after any gap it tells subscribers to look again.
type listener struct {
	*fanout.Listener
	s *Store
}

func newListener(s *Store) *listener {
	l := &listener{s: s}
	l.Listener = fanout.NewListener(subscriberBuffer, s.cfg.pollOnly, l.run)
	return l
}

// run receives until ctx ends. A network error, or a subscription confirmed again (go-redis
// resubscribed on a new connection), means messages may have been lost meanwhile: subscribers
// are told to look at every queue and every job they wait for.
func (l *listener) run(ctx context.Context, markReady func()) {
	ps := l.s.rdb.Subscribe(ctx, l.s.channel)
	defer ps.Close()
	// A blocked ReceiveTimeout does not return when ctx ends: closing the PubSub ends it.
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	confirmed, missed, failures := false, false, 0
	for {
		msg, err := ps.ReceiveTimeout(ctx, pingEvery)
		if ctx.Err() != nil {
			markReady()
			return
		}
		if err != nil {
			var netErr net.Error
			if errors.As(err, &netErr) && netErr.Timeout() {
				if err := ps.Ping(ctx); err == nil {
					continue
				}
			}
			markReady()
			// Subscribe may have returned on this failure (markReady): whatever is published
			// until the subscription lands is lost, whether or not one was confirmed before.
			missed = true
			delay := reconnectBackoff.Delay(failures)
			failures++
			l.s.cfg.logger.Warn("rota: redis subscriber disconnected", "namespace", l.s.cfg.namespace, "err", err, "retry_in", delay)
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			continue
		}
		switch m := msg.(type) {
		case *goredis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			if confirmed {
				missed = true
			}
			confirmed, failures = true, 0
			markReady()
			if missed {
				missed = false
				l.Hub().Publish(fanout.Missed[:])
			}
		case *goredis.Message:
			l.dispatch(m.Payload)
		}
	}
}

func (l *listener) dispatch(payload string) {
	kind, rest, _ := strings.Cut(payload, " ")
	switch kind {
	case "i":
		if o, q, ok := strings.Cut(strings.TrimPrefix(rest, "~"), " "); ok && strings.HasPrefix(rest, "~") {
			if o == l.s.origin {
				return
			}
			rest = q
		}
		l.Hub().Publish([]store.Notification{{Topic: store.TopicInsert, Queue: rest}})
	case "f":
		out := make([]store.Notification, 0, strings.Count(rest, ",")+1)
		for f := range strings.SplitSeq(rest, ",") {
			id, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				l.s.cfg.logger.Warn("rota: bad redis final notification", "payload", payload)
				return
			}
			out = append(out, store.Notification{Topic: store.TopicFinal, JobID: id})
		}
		l.Hub().Publish(out)
	case "c":
		l.Hub().Publish([]store.Notification{{Topic: store.TopicChanged}})
	}
}

// announceLocally wakes this Store's own subscribers at once for the queues an insert made work
// available in; the PUBLISH is for other processes.
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
