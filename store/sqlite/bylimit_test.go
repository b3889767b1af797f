package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/store"
)

func TestByLimitWritesSmallLimitsIn(t *testing.T) {
	b := newByLimit(`SELECT id FROM jobs WHERE queue = :queue LIMIT :limit`)
	q, args := b.limited(64, sql.Named("queue", "default"))
	if want := `SELECT id FROM jobs WHERE queue = :queue LIMIT 64`; q != want {
		t.Errorf("limited(64) = %q, want %q", q, want)
	}
	if len(args) != 1 {
		t.Errorf("limited(64) args = %v, want only :queue", args)
	}
	q, args = b.limited(87, sql.Named("queue", "default"))
	if !strings.HasSuffix(q, "LIMIT :limit") || len(args) != 2 {
		t.Errorf("limited(87) = %q, %v; want the limit bound: 87 is taken in pieces", q, args)
	}
	q, args = b.limited(literalLimitMax+1, sql.Named("queue", "default"))
	if !strings.HasSuffix(q, "LIMIT :limit") || len(args) != 2 || args[1].(sql.NamedArg).Value != literalLimitMax+1 {
		t.Errorf("limited(%d) = %q, %v; want the limit bound", literalLimitMax+1, q, args)
	}
}

// A claim of any size up to literalLimitMax is at most three pieces, each a size with a text.
func TestPieces(t *testing.T) {
	for n := 1; n <= literalLimitMax; n++ {
		rest, pieces := n, 0
		for rest > 0 {
			p := piece(rest)
			if p < 1 || p > rest {
				t.Fatalf("piece(%d) = %d", rest, p)
			}
			if q, _ := newByLimit("SELECT 1 LIMIT :limit").limited(p); strings.Contains(q, ":limit") {
				t.Errorf("piece(%d) = %d has no text of its own", rest, p)
			}
			rest -= p
			pieces++
		}
		if pieces > 3 {
			t.Errorf("a claim of %d takes %d pieces", n, pieces)
		}
	}
	if p := piece(literalLimitMax + 5); p != literalLimitMax+5 {
		t.Errorf("piece(%d) = %d, want the whole claim (bound limit)", literalLimitMax+5, p)
	}
}

// Claims of every size up to literalLimitMax, on a queue that has the jobs and on one that has
// none, leave the writer with a claim and an expiry statement for each of literalSizes at most:
// each prepared statement holds memory for as long as the store is open.
func TestClaimsPrepareFewStatements(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	jobs := make([]store.InsertParams, literalLimitMax*(literalLimitMax+1)/2)
	for i := range jobs {
		jobs[i] = store.InsertParams{Kind: "k", Queue: "full", Args: []byte(`{}`), MaxAttempts: 1}
	}
	if _, err := s.Insert(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	for _, queue := range []string{"full", "empty"} {
		for n := 1; n <= literalLimitMax; n++ {
			rows, err := s.Claim(ctx, store.ClaimParams{Queue: queue, Kinds: []string{"k"}, Max: n, Owner: "n", LeaseFor: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]int{"full": n, "empty": 0}[queue]; len(rows) != want {
				t.Fatalf("claim of %d on %s: %d jobs, want %d", n, queue, len(rows), want)
			}
		}
	}
	n := prepared(s, "UPDATE jobs SET state = 'running'", "UPDATE jobs SET state = 'expired'")
	claims, expiries := n[0], n[1]
	if claims > len(literalSizes) || expiries > len(literalSizes) {
		t.Errorf("the writer prepared %d claim and %d expiry statements, want at most %d each", claims, expiries, len(literalSizes))
	}
}

// Inserts and completions of every size up to a few chunks leave the writer with an insert, a
// completion and a bare completion statement for each of literalSizes at most, and apply every
// job and outcome.
func TestInsertsAndCompletionsPrepareFewStatements(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	const most = 2*insertChunk + 7
	total := 0
	for n := 1; n <= most; n++ {
		jobs := make([]store.InsertParams, n)
		for i := range jobs {
			jobs[i] = store.InsertParams{Kind: "k", Queue: "q", Args: []byte(`{}`), MaxAttempts: 1}
		}
		res, err := s.Insert(ctx, jobs)
		if err != nil || len(res) != n {
			t.Fatalf("insert of %d: %d results, %v", n, len(res), err)
		}
		total += n
	}
	claimed, err := s.Claim(ctx, store.ClaimParams{Queue: "q", Kinds: []string{"k"}, Max: total, Owner: "n", LeaseFor: time.Minute})
	if err != nil || len(claimed) != total {
		t.Fatalf("claim: %d jobs, %v; want %d", len(claimed), err, total)
	}
	for n := 1; len(claimed) > 0; n++ {
		part := claimed[:min(n, len(claimed))]
		claimed = claimed[len(part):]
		outcomes := make([]store.Outcome, len(part))
		for i, j := range part {
			outcomes[i] = store.Outcome{ID: j.ID, Fence: j.Fence, State: store.StateCompleted}
			if n%2 == 0 { // with a result: the full statement, not the bare completions' one
				outcomes[i].Result = []byte(`{}`)
			}
		}
		applied, err := s.Complete(ctx, outcomes)
		if err != nil {
			t.Fatal(err)
		}
		for i, ok := range applied {
			if !ok {
				t.Fatalf("completion of %d: outcome %d not applied", len(part), i)
			}
		}
	}
	n := prepared(s, "INSERT INTO jobs (", "WITH o (id, fence, state", "WITH o (id, fence) AS")
	inserts, completions, bare := n[0], n[1], n[2]
	if inserts == 0 || completions == 0 || bare == 0 {
		t.Fatalf("found %d insert, %d completion and %d bare completion statements: the test no longer knows their texts",
			inserts, completions, bare)
	}
	if inserts > len(literalSizes) || completions > len(literalSizes) || bare > len(literalSizes) {
		t.Errorf("the writer prepared %d insert, %d completion and %d bare completion statements, want at most %d each",
			inserts, completions, bare, len(literalSizes))
	}
}

// prepared counts the statements the writer holds prepared whose text starts with each prefix.
func prepared(s *Store, prefixes ...string) []int {
	n := make([]int, len(prefixes))
	for q := range s.w.cache.stmts {
		for i, p := range prefixes {
			if strings.HasPrefix(q, p) {
				n[i]++
			}
		}
	}
	return n
}
