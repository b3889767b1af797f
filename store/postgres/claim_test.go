package postgres

import (
	"strings"
	"testing"

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

// explainPinned returns the plan q is prepared with after pinPlanSQL, the generic plan, for
// the parameter values args (SQL literals).
func explainPinned(t *testing.T, s *Store, q, args string) string {
	t.Helper()
	var plan []string
	err := pgx.BeginFunc(t.Context(), s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(t.Context(), pinPlanSQL); err != nil {
			return err
		}
		if _, err := tx.Exec(t.Context(), "PREPARE explained AS "+s.sql(q)); err != nil {
			return err
		}
		rs, err := tx.Query(t.Context(), "EXPLAIN EXECUTE explained("+args+")")
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
