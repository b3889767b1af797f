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
	n := func(id int64) store.Notification { return store.Notification{Topic: store.TopicFinal, JobID: id} }
	// The third does not fit: the look-again pair takes its place, and the fourth's, without
	// blocking.
	h.Publish([]store.Notification{n(1), n(2), n(3), n(4)})
	for _, ch := range []<-chan store.Notification{a, b} {
		want := []store.Notification{n(1), n(2), Missed[0], Missed[1]}
		if got := []store.Notification{<-ch, <-ch, <-ch, <-ch}; !slices.Equal(got, want) {
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

// While the look-again pair waits unread, it stands for every notification that finds no room;
// once the subscriber has read up, notifications come again as they are.
func TestHubPairStandsForLaterLosses(t *testing.T) {
	h := New(3)
	ch, err := h.Subscribe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n := func(id int64) store.Notification { return store.Notification{Topic: store.TopicFinal, JobID: id} }
	h.Publish([]store.Notification{n(1), n(2), n(3), n(4)}) // 1-3, then the pair for 4
	if got := <-ch; got != n(1) {
		t.Fatalf("received %v, want %v", got, n(1))
	}
	h.Publish([]store.Notification{n(5)}) // the pair is unread: 5 is dropped
	if got := <-ch; got != n(2) {
		t.Fatalf("received %v, want %v", got, n(2))
	}
	h.Publish([]store.Notification{n(6)}) // there is room, but the pair, unread, stands for 6
	want := []store.Notification{n(3), Missed[0], Missed[1]}
	if got := []store.Notification{<-ch, <-ch, <-ch}; !slices.Equal(got, want) {
		t.Fatalf("received %v, want %v", got, want)
	}
	h.Publish([]store.Notification{n(7)})
	if got := <-ch; got != n(7) {
		t.Fatalf("received %v after reading up, want %v", got, n(7))
	}
}
