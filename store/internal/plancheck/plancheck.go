// Package plancheck refuses the jobs a PlanSchedule call may not insert, before a store writes
// anything: every job must name the schedule planning it (store.Scheduler.PlanSchedule). A job
// that named another, or none, would escape the cancellation of the schedule's waiting jobs when
// the schedule is edited or removed, and run on under a timing nobody asked for.
package plancheck

import (
	"fmt"

	"github.com/rotahq/rota/store"
)

// Check reports the first of jobs that does not name schedule.
func Check(schedule string, jobs []store.InsertParams) error {
	for i, j := range jobs {
		if j.Schedule != schedule {
			return fmt.Errorf("job %d names schedule %q", i, j.Schedule)
		}
	}
	return nil
}
