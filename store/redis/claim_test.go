package redis

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/rotahq/rota/store"
)

// A claim's rows come joined from the script (claimrow.go) and read as Get reads the same jobs,
// in claim order, whatever their fields hold: args of many sizes, args with a NUL byte (read
// again after the claim), and jobs whose claim writes through the script's general path (a
// unique key).
func TestClaimRowsAsGetReadsThem(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	sizes := []int{0, 20, 200, 300, 70_000} // on both sides of the 64 bytes past which Redis keeps a hash as a hashtable, not a listpack
	for _, n := range []int{1, 16, 17, 60} {
		params := make([]store.InsertParams, n)
		for i := range params {
			pad := strings.Repeat("x", sizes[i%len(sizes)])
			if i%3 == 1 {
				pad += "\x00" // the store keeps args as the caller's bytes
			}
			params[i] = store.InsertParams{Kind: "k", Queue: "default", Args: fmt.Appendf(nil, `{"i":%d,"pad":"%s"}`, i, pad),
				MaxAttempts: 3, Priority: i % 3, Tags: []string{"t"}, Metadata: []byte(`{"m":1}`)}
			if i%4 == 1 {
				params[i].UniqueKey = fmt.Sprint("u", n, "-", i)
			}
		}
		if _, err := s.Insert(ctx, params); err != nil {
			t.Fatal(err)
		}
		rows, err := s.Claim(ctx, store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: n, Owner: "n1", LeaseFor: time.Minute})
		if err != nil || len(rows) != n {
			t.Fatalf("claim of %d: %d rows, %v", n, len(rows), err)
		}
		for i, r := range rows {
			if i > 0 && r.Priority > rows[i-1].Priority {
				t.Errorf("claim of %d: row %d (priority %d) after priority %d", n, i, r.Priority, rows[i-1].Priority)
			}
			got, err := s.Get(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r, got) {
				t.Errorf("claim of %d: claimed row\n%+v\nGet\n%+v", n, r, got)
			}
			if r.State != store.StateRunning || r.Attempt != 1 || r.Owner != "n1" || len(r.Tags) != 1 {
				t.Errorf("claim of %d: row %+v", n, r)
			}
		}
	}
}

// A claimed row that does not say how many fields it has, or says an odd number, is an error;
// one that splits into more parts than it says (a NUL byte in a value) is the job to read again.
func TestReadClaimRow(t *testing.T) {
	var f jobFields
	if err := readClaimRow("4\x0012\x00k\x00a\x00s\x00run", &f); err != nil || f.v[fKind] != "a" || f.v[fState] != "run" {
		t.Fatalf("good row: %v, fields %+v", err, f)
	}
	f = jobFields{}
	if err := readClaimRow("2\x0012\x00A\x00", &f); err != nil || !f.has[fArgs] || f.v[fArgs] != "" {
		t.Fatalf("row with an empty value: %v, fields %+v", err, f)
	}
	var a *ambiguousRow
	if err := readClaimRow("4\x0012\x00k\x00a\x00b\x00A\x00{\x00}", &jobFields{}); !errors.As(err, &a) || a.id != 12 {
		t.Errorf("a NUL in a value: %v, want job 12 to read again", err)
	}
	for name, bad := range map[string]string{
		"empty":        "",
		"no id":        "4",
		"not a count":  "x\x0012\x00k\x00a",
		"not an id":    "2\x00x\x00k\x00a",
		"odd count":    "3\x0012\x00k\x00a\x00s",
		"no fields":    "0\x0012\x00",
		"a packed row": "\x94\xa1k\xa1a\xa1s\xa3run",
		"negative":     "-2\x0012\x00k\x00a",
	} {
		if err := readClaimRow(bad, &jobFields{}); !errors.Is(err, errClaimRow) {
			t.Errorf("%s: %v, want errClaimRow", name, err)
		}
	}
}

// A claim steps over expired jobs past the thousand its first step ends, at the head of the
// ready set, ends them expired, and takes the job behind them.
func TestClaimStepsOverManyExpired(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC))
	s := open(t, WithClock(clk))
	expiring := make([]store.InsertParams, 1005)
	for i := range expiring {
		expiring[i] = job("k")
		expiring[i].ExpiresAt = clk.Now().Add(time.Second)
	}
	insertAll(t, s, expiring...)
	last := insertAll(t, s, job("k"))[0]
	clk.Advance(time.Minute)
	rows, err := s.Claim(t.Context(), store.ClaimParams{Queue: "default", Kinds: []string{"k"}, Max: 1, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(rows) != 1 || rows[0].ID != last.ID {
		t.Fatalf("claim: %v, %v; want job %d", rows, err, last.ID)
	}
	stats, err := s.QueueStats(t.Context())
	if err != nil || len(stats) != 1 || stats[0].Counts[store.StateExpired] != 1005 || stats[0].Counts[store.StateAvailable] != 0 {
		t.Fatalf("queue stats %v, %v; want 1005 expired and none available", stats, err)
	}
}
