package fanout

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/rotahq/rota/store"
)

func TestHub(t *testing.T) {
	h := New(2)
	ctx, cancel := context.WithCancel(context.Background())
	a, err := h.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Subscribe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The third does not fit: the look-again pair takes its place, and the fourth's, without
	// blocking.
	h.Publish([]store.Notification{n(1), n(2), n(3), n(4)})
	for _, ch := range []<-chan store.Notification{a, b} {
		want := []store.Notification{n(1), n(2), Missed[0], Missed[1]}
		if got := take(t, ch, 4); !slices.Equal(got, want) {
			t.Fatalf("received %v, want %v", got, want)
		}
		select {
		case got := <-ch:
			t.Fatalf("received %v after the look-again pair", got)
		default:
		}
	}
	cancel()
	if _, open := <-a; open {
		t.Fatal("a's channel is open after its context ended")
	}
	h.Publish([]store.Notification{n(5)})
	if got := <-b; got != n(5) {
		t.Fatalf("b received %v after a left", got)
	}
	h.Close()
	if _, open := <-b; open {
		t.Fatal("b's channel is open after Close")
	}
	if _, err := h.Subscribe(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Subscribe after Close: %v", err)
	}
}

// The first Subscribe starts the connection and returns once it is ready; Close stops it; a
// poll-only Listener never starts one.
func TestListener(t *testing.T) {
	started := make(chan struct{})
	stopped := make(chan struct{})
	l := NewListener(4, false, func(ctx context.Context, ready func()) {
		close(started)
		ready()
		<-ctx.Done()
		close(stopped)
	})
	if l.Running() {
		t.Fatal("running before the first Subscribe")
	}
	ch, err := l.Subscribe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	<-started
	l.Hub().Publish([]store.Notification{{Topic: store.TopicInsert, Queue: "q"}})
	if n := <-ch; n.Queue != "q" {
		t.Fatalf("got %+v", n)
	}
	if _, err := l.Subscribe(t.Context()); err != nil {
		t.Fatal(err)
	}
	l.Close()
	<-stopped
	for range ch {
	}
	if _, err := l.Subscribe(t.Context()); err == nil {
		t.Fatal("Subscribe after Close succeeded")
	}

	poll := NewListener(4, true, func(context.Context, func()) { t.Error("a poll-only Listener ran") })
	if _, err := poll.Subscribe(t.Context()); err != nil || poll.Running() {
		t.Fatalf("poll-only Subscribe: %v, running %v", err, poll.Running())
	}
	poll.Close()
}

// n is a final notification of job id.
func n(id int64) store.Notification { return store.Notification{Topic: store.TopicFinal, JobID: id} }

// subscribe subscribes to h until the test ends.
func subscribe(t *testing.T, h *Hub) <-chan store.Notification {
	t.Helper()
	ch, err := h.Subscribe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// take reads the n notifications a Publish has already put in ch, failing rather than waiting
// for one that is not there.
func take(t *testing.T, ch <-chan store.Notification, n int) []store.Notification {
	t.Helper()
	var got []store.Notification
	for range n {
		select {
		case x := <-ch:
			got = append(got, x)
		default:
			t.Fatalf("received %v, then nothing; want %d notifications", got, n)
		}
	}
	return got
}

// While the look-again pair waits unread, it stands for every notification that finds no room;
// once the subscriber has read up, notifications come again as they are.
func TestHubPairStandsForLaterLosses(t *testing.T) {
	h := New(3)
	ch := subscribe(t, h)
	h.Publish([]store.Notification{n(1), n(2), n(3), n(4)}) // 1-3, then the pair for 4
	if got := take(t, ch, 1)[0]; got != n(1) {
		t.Fatalf("received %v, want %v", got, n(1))
	}
	h.Publish([]store.Notification{n(5)}) // the pair is unread: 5 is dropped
	if got := take(t, ch, 1)[0]; got != n(2) {
		t.Fatalf("received %v, want %v", got, n(2))
	}
	h.Publish([]store.Notification{n(6)}) // there is room, but the pair, unread, stands for 6
	want := []store.Notification{n(3), Missed[0], Missed[1]}
	if got := take(t, ch, 3); !slices.Equal(got, want) {
		t.Fatalf("received %v, want %v", got, want)
	}
	h.Publish([]store.Notification{n(7)})
	if got := take(t, ch, 1)[0]; got != n(7) {
		t.Fatalf("received %v after reading up, want %v", got, n(7))
	}
}

// A notification published once the pair's first half is read goes in after its second half:
// the runtime has acted on the first (claimed on every queue) before that notification's commit,
// and the second (TopicChanged) wakes only waiters, so dropping it would lose a wake-up.
func TestHubNotCoveredBetweenTheHalves(t *testing.T) {
	h := New(2)
	ch := subscribe(t, h)
	h.Publish([]store.Notification{n(1), n(2), n(3)})
	want := []store.Notification{n(1), n(2), Missed[0]}
	if got := take(t, ch, 3); !slices.Equal(got, want) {
		t.Fatalf("received %v, want %v", got, want)
	}
	insert := store.Notification{Topic: store.TopicInsert, Queue: "q"}
	h.Publish([]store.Notification{insert})
	want = []store.Notification{Missed[1], insert}
	if got := take(t, ch, 2); !slices.Equal(got, want) {
		t.Fatalf("received %v, want %v", got, want)
	}
}
