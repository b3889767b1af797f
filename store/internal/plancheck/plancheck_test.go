package plancheck

import (
	"testing"

	"github.com/rotahq/rota/store"
)

func TestCheck(t *testing.T) {
	jobs := []store.InsertParams{{Schedule: "s"}, {Schedule: "s"}}
	if err := Check("s", jobs); err != nil {
		t.Fatalf("Check of jobs naming their schedule: %v", err)
	}
	for _, other := range []string{"t", ""} {
		if err := Check("s", append(jobs, store.InsertParams{Schedule: other})); err == nil {
			t.Errorf("Check accepted a job naming schedule %q", other)
		}
	}
}
