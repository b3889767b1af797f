package postgres

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPinnedPlansIgnoreStatistics checks the plans the claim and completion statements run
// with, under the settings they pin: on a table filled faster than it was analyzed, and on an
// analyzed one whose jobs have no expiry. Unpinned, the first gathered and sorted the whole queue
// at every claim, and a generic plan of the second read the whole table to find expired jobs.
func TestPinnedPlansIgnoreStatistics(t *testing.T) {
	s := open(t)
	ps := benchJobs(20_000)
	mustInsert(t, s, ps...)

	claim := "NULL, 'default', '{k}', 100, 'node', 60000000"
	within := claim + ", '{100}'"
	complete := "NULL, '{1,2}', '{1,1}', '{completed,completed}', '{completed,completed}', '{NULL,NULL}', '{f,f}', '{f,f}', '{NULL,NULL}', '{NULL,NULL}'"
	for _, stage := range []string{"never analyzed", "analyzed"} {
		if stage == "analyzed" {
			if _, err := s.pool.Exec(t.Context(), s.sql("ANALYZE {schema}.jobs")); err != nil {
				t.Fatal(err)
			}
		}
		if promote := explainPinned(t, s, promoteSQL, "NULL, 'default'"); !strings.Contains(promote, "Index Scan using jobs_due") {
			t.Errorf("%s: promotion plan does not walk jobs_due:\n%s", stage, promote)
		}
		plan := explainPinned(t, s, claimSQL, claim)
		for _, want := range []string{"Index Scan using jobs_claim", "Index Scan using jobs_expiry"} {
			if !strings.Contains(plan, want) {
				t.Errorf("%s: claim plan lacks %q:\n%s", stage, want, plan)
			}
		}
		completion := explainPinned(t, s, completeSQL, complete)
		if !strings.Contains(completion, "Index Scan using jobs_pkey") {
			t.Errorf("%s: completion plan does not look jobs up by id:\n%s", stage, completion)
		}
		for _, plan := range []string{plan, explainPinned(t, s, claimWithinSQL, within), completion} {
			for _, unwanted := range []string{"Seq Scan on jobs", "Bitmap Heap Scan", "Sort Key: jobs", "JIT"} {
				if strings.Contains(plan, unwanted) {
					t.Errorf("%s: plan has %q:\n%s", stage, unwanted, plan)
				}
			}
		}
	}
}

// A claim on a queue whose jobs all wait for a future time reads none of them: promotion stops
// at the first job not yet due, and the claim index holds available jobs only. With every
// claimable state in one index, such a claim walked every waiting job (270 ms with a million).
func TestClaimReadsNoFutureJobs(t *testing.T) {
	s := open(t)
	ps := benchJobs(10_000)
	for i := range ps {
		ps[i].RunAt = time.Now().Add(24 * time.Hour)
	}
	mustInsert(t, s, ps...)
	if _, err := s.pool.Exec(t.Context(), s.sql("ANALYZE {schema}.jobs")); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct{ sql, args string }{
		{promoteSQL, "NULL, 'default'"},
		{claimSQL, "NULL, 'default', '{k}', 100, 'node', 60000000"},
	} {
		plan := explainPinned(t, s, q.sql, q.args, "ANALYZE, BUFFERS")
		m := regexp.MustCompile(`Buffers: shared hit=(\d+)`).FindStringSubmatch(plan)
		if m == nil {
			continue // nothing read at all
		}
		if n, _ := strconv.Atoi(m[1]); n > 20 {
			t.Errorf("read %d buffers with 10,000 jobs due tomorrow and none due now:\n%s", n, plan)
		}
	}
}

// explainPinned returns the plan q is prepared with after pinPlanSQL, the generic plan, for
// the parameter values args (SQL literals).
func explainPinned(t *testing.T, s *Store, q, args string, options ...string) string {
	t.Helper()
	var plan []string
	err := pgx.BeginFunc(t.Context(), s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(t.Context(), pinPlanSQL); err != nil {
			return err
		}
		if _, err := tx.Exec(t.Context(), "PREPARE explained AS "+s.sql(q)); err != nil {
			return err
		}
		explain := "EXPLAIN"
		if len(options) > 0 {
			explain += " (" + strings.Join(options, ", ") + ")"
		}
		rs, err := tx.Query(t.Context(), explain+" EXECUTE explained("+args+")")
		if err != nil {
			return err
		}
		plan, err = pgx.CollectRows(rs, pgx.RowTo[string])
		if err != nil {
			return err
		}
		_, err = tx.Exec(t.Context(), "DEALLOCATE explained")
		return err
	})
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	return strings.Join(plan, "\n")
}
