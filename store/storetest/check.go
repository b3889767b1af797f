package storetest

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

// sameJSON reports whether a and b hold the same JSON value. Empty and null are the same: a store
// may keep an absent document as either.
func sameJSON(a, b []byte) bool {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	absent := func(x []byte) bool { return len(x) == 0 || string(x) == "null" }
	if absent(a) || absent(b) {
		return absent(a) && absent(b)
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(va, vb)
}

func wantJSON(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !sameJSON(got, want) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

func wantTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func wantState(t *testing.T, j *store.JobRow, want store.State) {
	t.Helper()
	if j.State != want {
		t.Errorf("job %d: state %s, want %s", j.ID, j.State, want)
	}
}

// wantUnclaimed checks that j carries no claim: only a running job has an owner and a lease.
func wantUnclaimed(t *testing.T, j *store.JobRow) {
	t.Helper()
	if j.Owner != "" || !j.LeaseUntil.IsZero() {
		t.Errorf("job %d (%s): owner %q, lease until %v; want none", j.ID, j.State, j.Owner, j.LeaseUntil)
	}
}

// wantFinalized checks that j ended in state at the given time.
func wantFinalized(t *testing.T, j *store.JobRow, state store.State, at time.Time) {
	t.Helper()
	wantState(t, j, state)
	wantTime(t, "FinalizedAt", j.FinalizedAt, at)
}

// sameJob compares every field of two jobs.
func sameJob(t *testing.T, got, want *store.JobRow) {
	t.Helper()
	if got.ID != want.ID || got.Kind != want.Kind || got.Queue != want.Queue ||
		got.Priority != want.Priority || got.State != want.State || got.Attempt != want.Attempt ||
		got.MaxAttempts != want.MaxAttempts || got.UniqueKey != want.UniqueKey || got.Schedule != want.Schedule ||
		got.Owner != want.Owner || got.Fence != want.Fence || got.CancelRequested != want.CancelRequested {
		t.Errorf("job differs:\n got %+v\nwant %+v", got, want)
	}
	if len(got.Tags) != 0 || len(want.Tags) != 0 {
		if !slices.Equal(got.Tags, want.Tags) {
			t.Errorf("Tags = %q, want %q", got.Tags, want.Tags)
		}
	}
	wantJSON(t, "Args", got.Args, want.Args)
	wantJSON(t, "Metadata", got.Metadata, want.Metadata)
	wantJSON(t, "Result", got.Result, want.Result)
	wantTime(t, "RunAt", got.RunAt, want.RunAt)
	wantTime(t, "ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	wantTime(t, "CreatedAt", got.CreatedAt, want.CreatedAt)
	wantTime(t, "AttemptedAt", got.AttemptedAt, want.AttemptedAt)
	wantTime(t, "FinalizedAt", got.FinalizedAt, want.FinalizedAt)
	wantTime(t, "LeaseUntil", got.LeaseUntil, want.LeaseUntil)
	sameErrors(t, got.Errors, want.Errors)
}

func sameErrors(t *testing.T, got, want []store.AttemptError) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("Errors = %+v, want %+v", got, want)
		return
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Attempt != w.Attempt || g.Error != w.Error || g.Trace != w.Trace || !g.At.Equal(w.At) {
			t.Errorf("Errors[%d] = %+v, want %+v", i, g, w)
		}
	}
}
