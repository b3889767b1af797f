package rota

import (
	"context"
	"testing"
	"time"
)

// A user cancel through the node's own client wins over what the handler answers it with: a
// Snooze (or an error) ends the job cancelled, and the node's event says so.
func TestLocalCancelWinsOverSnooze(t *testing.T) {
	started := make(chan struct{})
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error {
		close(started)
		<-ctx.Done()
		return Snooze(time.Minute)
	}, nil)
	job := b.insert(t, testArgs{}, nil)
	recv(t, started)
	if _, err := b.client.Cancel(context.Background(), job.ID); err != nil {
		t.Fatal(err)
	}
	var ev Event
	for {
		ev = recv(t, b.events)
		if ev.Job != nil && ev.Job.ID == job.ID && ev.Type != EventJobStarted {
			break
		}
	}
	row := b.get(t, job.ID)
	if row.State != StateCancelled || ev.Type != EventJobCancelled {
		t.Fatalf("job ended %s; the node's outcome event is %s", row.State, ev.Type)
	}
}
