package rota

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rotahq/rota/store"
	"github.com/rotahq/rota/store/sqlite"
)

func TestInsertRejectsBadInputClearly(t *testing.T) {
	clock := clockwork.NewFakeClockAt(epoch)
	c := NewClient(openStore(t, clock), &ClientConfig{Clock: clock, MaxArgsBytes: 64})
	cases := []struct {
		name string
		args Args
		opts *InsertOpts
		want string
	}{
		{"malformed json", RawArgs{KindName: "x", JSON: json.RawMessage(`{"a":`)}, nil, "encode args"},
		{"args over limit", RawArgs{KindName: "x", JSON: json.RawMessage(`"` + strings.Repeat("a", 100) + `"`)}, nil, "over the limit of 64 bytes"},
		{"empty kind", RawArgs{}, nil, "kind is empty"},
		{"bad kind", RawArgs{KindName: "send email"}, nil, `kind "send email"`},
		{"bad queue", testArgs{}, &InsertOpts{Queue: "a b"}, `queue "a b"`},
		{"long queue", testArgs{}, &InsertOpts{Queue: strings.Repeat("q", 200)}, "over the limit of 128"},
		{"zero attempts", testArgs{}, &InsertOpts{MaxAttempts: -1}, "max attempts -1"},
		{"priority", testArgs{}, &InsertOpts{Priority: 5000}, "priority 5000"},
		{"expired", testArgs{}, &InsertOpts{ExpiresAt: epoch.Add(-time.Second)}, "already passed"},
		{"expires before run", testArgs{}, &InsertOpts{RunAt: epoch.Add(time.Hour), ExpiresAt: epoch.Add(time.Minute)}, "before it may run"},
		{"supersede without key", testArgs{}, &InsertOpts{Supersede: true}, "needs a unique key"},
		{"nil args", nil, nil, "args are nil"},
		{"empty tag", testArgs{}, &InsertOpts{Tags: []string{"a", ""}}, "tag 2 is empty"},
		{"negative drop if busy", testArgs{}, &InsertOpts{DropIfBusy: -1}, "drop if busy -1"},
		{"NUL in args", RawArgs{KindName: "x", JSON: json.RawMessage(`{"a":"\u0000"}`)}, nil, `hold \u0000`},
		{"lone high surrogate", RawArgs{KindName: "x", JSON: json.RawMessage(`"\ud800x"`)}, nil, `hold \ud800`},
		{"lone low surrogate", RawArgs{KindName: "x", JSON: json.RawMessage(`["\uDC00"]`)}, nil, `hold \uDC00`},
		{"NUL in metadata", testArgs{}, &InsertOpts{Metadata: map[string]any{"k": "\x00"}}, `metadata holds \u0000`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Insert(context.Background(), tc.args, tc.opts)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
	if rows, err := c.List(context.Background(), ListParams{}); err != nil || len(rows) != 0 {
		t.Fatalf("rejected inserts left %d jobs (%v)", len(rows), err)
	}
}

func TestInsertManyIsAllOrNothing(t *testing.T) {
	clock := clockwork.NewFakeClockAt(epoch)
	c := NewClient(openStore(t, clock), &ClientConfig{Clock: clock})
	jobs := make([]InsertManyParams, 3000)
	for i := range jobs {
		jobs[i] = InsertManyParams{Args: testArgs{N: i}}
	}
	jobs[2999].Opts = &InsertOpts{Queue: "bad queue"}
	if _, err := c.InsertMany(context.Background(), jobs); err == nil || !strings.Contains(err.Error(), "job 3000 of 3000") {
		t.Fatalf("err = %v, want the bad job named", err)
	}
	jobs[2999].Opts = nil
	res, err := c.InsertMany(context.Background(), jobs)
	if err != nil || len(res) != 3000 {
		t.Fatalf("insert many: %d results, %v", len(res), err)
	}
	if res[0].Job.Queue != QueueDefault || res[0].Job.MaxAttempts != MaxAttemptsDefault || res[0].Job.State != StateAvailable {
		t.Fatalf("defaults not applied: %+v", res[0].Job)
	}
}

func TestDelayedInsertIsScheduled(t *testing.T) {
	clock := clockwork.NewFakeClockAt(epoch)
	c := NewClient(openStore(t, clock), &ClientConfig{Clock: clock})
	res, err := c.Insert(context.Background(), testArgs{}, &InsertOpts{RunAt: epoch.Add(time.Hour)})
	if err != nil || res.Job.State != StateScheduled || !res.Job.RunAt.Equal(epoch.Add(time.Hour)) {
		t.Fatalf("delayed insert: %+v, %v", res, err)
	}
}

func TestDropIfBusyRefusesWhenTheQueueIsFull(t *testing.T) {
	clock := clockwork.NewFakeClockAt(epoch)
	c := NewClient(openStore(t, clock), &ClientConfig{Clock: clock})
	ctx := context.Background()
	opts := &InsertOpts{Queue: "thumbnails", DropIfBusy: 2}
	for i := range 2 {
		if _, err := c.Insert(ctx, testArgs{N: i}, opts); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	if _, err := c.Insert(ctx, testArgs{N: 3}, opts); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), `2 jobs wait in queue "thumbnails"`) {
		t.Fatalf("third best-effort insert: %v, want ErrBusy", err)
	}
	if _, err := c.Insert(ctx, testArgs{N: 3}, &InsertOpts{Queue: "thumbnails"}); err != nil {
		t.Fatalf("a normal insert into the busy queue: %v", err)
	}
	// In the caller's transaction too.
	tx, err := c.Store().(*sqlite.Store).DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := c.InsertTx(ctx, tx, []InsertManyParams{{Args: testArgs{N: 4}, Opts: opts}}); !errors.Is(err, ErrBusy) {
		t.Fatalf("best-effort insert in a transaction: %v, want ErrBusy", err)
	}
}

func TestDropIfBusyRefusesWhenTheQueueLimitIsSaturated(t *testing.T) {
	clock := clockwork.NewFakeClockAt(epoch)
	st := openStore(t, clock)
	c := NewClient(st, &ClientConfig{Clock: clock})
	ctx := context.Background()
	if err := c.SetLimit(ctx, Limit{Scope: LimitQueue, Name: "exports", MaxRunning: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Insert(ctx, testArgs{}, &InsertOpts{Queue: "exports"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim(ctx, store.ClaimParams{Queue: "exports", Kinds: []string{"test"}, Max: 5, Owner: "n", LeaseFor: time.Minute}); err != nil {
		t.Fatal(err)
	}
	load, err := c.QueueLoad(ctx, "exports")
	if err != nil || load.Running != 1 || load.MaxRunning != 1 || !load.Saturated() {
		t.Fatalf("load %+v, %v", load, err)
	}
	if _, err := c.Insert(ctx, testArgs{}, &InsertOpts{Queue: "exports", DropIfBusy: 100}); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "fleet-wide limit") {
		t.Fatalf("best-effort insert into a saturated queue: %v", err)
	}
	if err := c.SetLimit(ctx, Limit{Scope: "shelf", Name: "x", MaxRunning: 1}); !errors.Is(err, store.ErrInvalidLimit) {
		t.Fatalf("bad scope: %v", err)
	}
}

// busyAfterOneStart sets limit, inserts and claims one job of queue exports, and returns the
// error of a best-effort insert made after it.
func busyAfterOneStart(t *testing.T, limit Limit) error {
	t.Helper()
	clock := clockwork.NewFakeClockAt(epoch)
	st := openStore(t, clock)
	c := NewClient(st, &ClientConfig{Clock: clock})
	ctx := context.Background()
	if err := c.SetLimit(ctx, limit); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Insert(ctx, testArgs{}, &InsertOpts{Queue: "exports"}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Claim(ctx, store.ClaimParams{Queue: "exports", Kinds: []string{"test"}, Max: 5, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(got), err)
	}
	_, err = c.Insert(ctx, testArgs{}, &InsertOpts{Queue: "exports", DropIfBusy: 100})
	return err
}

// A best-effort insert into a queue whose rate has no start left in its window is dropped: the
// gate is closed as surely as by a full concurrency limit.
func TestDropIfBusyRefusesWhenTheQueueRateIsUsedUp(t *testing.T) {
	err := busyAfterOneStart(t, Limit{Scope: LimitQueue, Name: "exports", Rate: 1, Period: time.Hour})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), `limit on queue "exports" started 1 jobs in the last 1h0m0s`) {
		t.Fatalf("best-effort insert into a queue whose rate is used up: %v; want ErrBusy saying why", err)
	}
}

// The same for a fleet-wide concurrency limit on the job's kind, whatever its queue.
func TestDropIfBusyRefusesWhenTheKindLimitIsSaturated(t *testing.T) {
	err := busyAfterOneStart(t, Limit{Scope: LimitKind, Name: "test", MaxRunning: 1})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), `limit on kind "test" runs 1 jobs`) {
		t.Fatalf("best-effort insert of a kind at its fleet-wide limit: %v; want ErrBusy saying why", err)
	}
}

// A limit with room left, or on another kind, lets a best-effort insert in.
func TestDropIfBusyAdmitsUnderLimitsWithRoom(t *testing.T) {
	if err := busyAfterOneStart(t, Limit{Scope: LimitQueue, Name: "exports", MaxRunning: 2, Rate: 2, Period: time.Hour}); err != nil {
		t.Fatalf("best-effort insert under a limit with room: %v", err)
	}
	if err := busyAfterOneStart(t, Limit{Scope: LimitKind, Name: "other", MaxRunning: 1}); err != nil {
		t.Fatalf("best-effort insert beside another kind's limit: %v", err)
	}
}

// Every field of an insert is bounded, and a value just over a bound is refused with the
// field and the limit named, while one at the bound is inserted.
func TestInsertBoundsEveryField(t *testing.T) {
	clock := clockwork.NewFakeClockAt(epoch)
	c := NewClient(openStore(t, clock), &ClientConfig{Clock: clock})
	tags := func(n, size int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = strings.Repeat("t", size)
		}
		return out
	}
	metadata := func(size int) json.RawMessage { // a JSON string of size bytes, quotes included
		return json.RawMessage(`"` + strings.Repeat("m", size-2) + `"`)
	}
	kind := func(n int) Args { return RawArgs{KindName: strings.Repeat("k", n)} }
	cases := []struct {
		name     string
		ok, over InsertManyParams
		field    string
		limit    int
	}{
		{"kind", InsertManyParams{Args: kind(NameMaxLen)}, InsertManyParams{Args: kind(NameMaxLen + 1)}, "kind", NameMaxLen},
		{"queue", InsertManyParams{Args: testArgs{}, Opts: &InsertOpts{Queue: strings.Repeat("q", NameMaxLen)}},
			InsertManyParams{Args: testArgs{}, Opts: &InsertOpts{Queue: strings.Repeat("q", NameMaxLen+1)}}, "queue", NameMaxLen},
		{"max attempts", InsertManyParams{Args: testArgs{}, Opts: &InsertOpts{MaxAttempts: MaxAttemptsMax}},
			InsertManyParams{Args: testArgs{}, Opts: &InsertOpts{MaxAttempts: MaxAttemptsMax + 1}}, "max attempts", MaxAttemptsMax},
		{"unique key", InsertManyParams{Args: testArgs{}, Opts: &InsertOpts{UniqueKey: strings.Repeat("k", UniqueKeyMaxBytes)}},
			InsertManyParams{Args: testArgs{}, Opts: &InsertOpts{UniqueKey: strings.Repeat("k", UniqueKeyMaxBytes+1)}}, "unique key", UniqueKeyMaxBytes},
		{"tag count", InsertManyParams{Args: testArgs{}, Opts: &InsertOpts{Tags: tags(TagsMax, 1)}},
			InsertManyParams{Args: testArgs{}, Opts: &InsertOpts{Tags: tags(TagsMax+1, 1)}}, "tags", TagsMax},
		{"tag size", InsertManyParams{Args: testArgs{}, Opts: &InsertOpts{Tags: tags(2, TagMaxBytes)}},
			InsertManyParams{Args: testArgs{}, Opts: &InsertOpts{Tags: append(tags(1, 1), strings.Repeat("t", TagMaxBytes+1))}}, "tag 2", TagMaxBytes},
		{"metadata", InsertManyParams{Args: testArgs{}, Opts: &InsertOpts{Metadata: metadata(MetadataMaxBytes)}},
			InsertManyParams{Args: testArgs{}, Opts: &InsertOpts{Metadata: metadata(MetadataMaxBytes + 1)}}, "metadata", MetadataMaxBytes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.Insert(context.Background(), tc.ok.Args, tc.ok.Opts); err != nil {
				t.Fatalf("at the limit: %v", err)
			}
			_, err := c.Insert(context.Background(), tc.over.Args, tc.over.Opts)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field) ||
				!strings.Contains(err.Error(), "over the limit of "+strconv.Itoa(tc.limit)) {
				t.Fatalf("over the limit: %v, want ErrInvalid naming %s and the limit %d", err, tc.field, tc.limit)
			}
		})
	}
}

// Texts a store keeps as text must be ones every store can keep: PostgreSQL refuses NUL and
// invalid UTF-8 in text columns, which would otherwise fail the insert in the store.
func TestInsertRefusesTextNoStoreCanHold(t *testing.T) {
	clock := clockwork.NewFakeClockAt(epoch)
	c := NewClient(openStore(t, clock), &ClientConfig{Clock: clock})
	for _, opts := range []*InsertOpts{{UniqueKey: "a\x00b"}, {UniqueKey: "\xff"}, {Tags: []string{"ok", "nul\x00"}}, {Tags: []string{"\xc3"}}} {
		if _, err := c.Insert(context.Background(), testArgs{}, opts); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not valid UTF-8 text without NUL") {
			t.Errorf("unique key %q, tags %q: %v, want ErrInvalid", opts.UniqueKey, opts.Tags, err)
		}
	}
	if rows, err := c.List(context.Background(), ListParams{}); err != nil || len(rows) != 0 {
		t.Fatalf("refused inserts left %d jobs (%v)", len(rows), err)
	}
}

// Args are stored as written: json.Marshal's escaping of <, > and & for HTML would store a shell
// command's `a > b && c` as `a \u003e b \u0026\u0026 c`, and every reader would see that.
func TestInsertStoresArgsAsWritten(t *testing.T) {
	clock := clockwork.NewFakeClockAt(epoch)
	c := NewClient(openStore(t, clock), &ClientConfig{Clock: clock})
	for _, args := range []Args{
		RawArgs{KindName: "sh", JSON: json.RawMessage(`{"cmd": "a > b && c < d"}`)},
		shellArgs{Cmd: "a > b && c < d"},
	} {
		res, err := c.Insert(t.Context(), args, nil)
		if err != nil {
			t.Fatal(err)
		}
		row, err := c.Get(t.Context(), res.Job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"cmd":"a > b && c < d"}`; string(row.Args) != want {
			t.Errorf("stored args %s, want %s", row.Args, want)
		}
	}
}

// shellArgs are args with a shell command in them.
type shellArgs struct {
	Cmd string `json:"cmd"`
}

func (shellArgs) Kind() string { return "sh" }

// A refusal is said once: the client names the job and the action, the store's sentinel says
// why, and the store's own wrapping of the same facts is not repeated.
func TestRefusalsAreSaidOnce(t *testing.T) {
	ctx := t.Context()
	clock := clockwork.NewFakeClockAt(epoch)
	st := openStore(t, clock)
	c := NewClient(st, &ClientConfig{Clock: clock})
	res, err := c.Insert(ctx, testArgs{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim(ctx, store.ClaimParams{Queue: QueueDefault, Kinds: []string{"test"}, Max: 1, Owner: "n", LeaseFor: time.Minute}); err != nil {
		t.Fatal(err)
	}
	id := res.Job.ID
	_, err = c.Retry(ctx, id)
	if want := fmt.Sprintf("rota: retry job %d: job is running", id); err == nil || err.Error() != want || !errors.Is(err, store.ErrJobRunning) {
		t.Errorf("retry of a running job: %v, want %q", err, want)
	}
	err = c.Delete(ctx, id)
	if want := fmt.Sprintf("rota: delete job %d: job is running", id); err == nil || err.Error() != want {
		t.Errorf("delete of a running job: %v, want %q", err, want)
	}
	_, err = c.Retry(ctx, 999)
	if want := "rota: retry job 999: not found"; err == nil || err.Error() != want || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("retry of no job: %v, want %q", err, want)
	}
}

func TestNameChars(t *testing.T) {
	for name, want := range map[string]bool{
		"email": true, "Mail.send": true, "a/b:c-d_e": true, "9lives": true, "x": true,
		"-lead": false, "_lead": false, ".lead": false, "/lead": false, "a b": false, "é": false,
		"tab\t": false, "semi;colon": false, "a\x00": false,
	} {
		if got := nameChars(name); got != want {
			t.Errorf("nameChars(%q) = %v, want %v", name, got, want)
		}
	}
}
