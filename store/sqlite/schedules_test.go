package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/rotahq/rota/store/storetest"
)

// Two stores on one file are two writers, as two processes are: the file's write lock, taken
// before PlanSchedule compares last_planned, lets one planner of a round win.
func TestPlanRaceTwoStores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rota.db")
	storetest.PlanRace(t, open(t, path), open(t, path))
}
