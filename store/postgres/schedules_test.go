package postgres

import (
	"testing"

	"github.com/rotahq/rota/store/storetest"
)

// Two Stores with pools of their own are two nodes: the schedule's row lock, taken by the
// compare-and-set, lets one planner of a round win.
func TestPlanRaceTwoStores(t *testing.T) {
	schema := newSchema(t)
	storetest.PlanRace(t, openSchema(t, schema, WithAutoMigrate()), openSchema(t, schema))
}
