package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/builtin"
	"github.com/rotahq/rota/internal/planner"
	"github.com/rotahq/rota/store"
)

// chaosVerdict is what checkChaos found: every broken invariant, with the ids that break it, and
// a summary of what was checked.
type chaosVerdict struct {
	problems []string
	summary  string
}

func (v *chaosVerdict) problem(format string, args ...any) {
	if len(v.problems) < 50 {
		v.problems = append(v.problems, fmt.Sprintf(format, args...))
	}
}

// uniqueTolerance allows for the clocks of two processes (the inserter's and the completing
// node's) writing created_at and finalized_at: the next holder of a unique key is inserted after
// the previous one ended, but each time is read before its transaction commits.
const uniqueTolerance = 250 * time.Millisecond

// checkChaos checks the suite's invariants over every job of the store and the programs'
// records:
//   - every job reached a final state, and none the load inserted is missing or holds another
//     job now;
//   - every job but a schedule's ended completed (none discarded or cancelled);
//   - the side effect of every fenced job holds its final attempt's fence: no run under an older
//     fence wrote after the owner that completed it; the result the store kept is that
//     attempt's; each run of the job had a fence of its own (every claim a new one), the final
//     attempt's the greatest;
//   - the completed runs of the queue limited to one running job never overlapped, and each
//     completed job of it ran;
//   - each occurrence of the schedule was planned once, none was skipped, each completed one ran
//     once under its final fence, and not every one expired (the compare-and-set and the
//     occurrence's unique key keep an occurrence planned once whoever plans it: leadership is
//     checked by the terms below);
//   - no two jobs held one unique key at once, and every insert answered as a duplicate found
//     its key held: by a job that had not ended before the insert;
//   - leader terms' fencing tokens grew whenever the lease changed hands, and leader services
//     ran within their node's terms.
func checkChaos(t *testing.T, c *cluster, rows []*rota.JobRow, inserted map[int64]string, dups []duplicate) chaosVerdict {
	t.Helper()
	var v chaosVerdict
	byID := map[int64]*rota.JobRow{}
	byKey := map[string]*rota.JobRow{}
	for _, j := range rows {
		byID[j.ID] = j
		if k := jobKeyOf(j); k != "" && k != "cron" {
			byKey[k] = j
		}
		if !j.State.Final() {
			v.problem("job %d (%s) is %s, not final", j.ID, jobKeyOf(j), j.State)
		}
	}
	for id, key := range inserted {
		if j := byID[id]; j == nil {
			v.problem("job %d (%s) was inserted and is gone", id, key)
		} else if got := jobKeyOf(j); got != key {
			v.problem("job %d was inserted as %s and is now %s: the id was given twice", id, key, got)
		}
	}
	for _, d := range dups {
		h := byID[d.holder]
		switch {
		case h == nil:
			v.problem("an insert of unique key %s at %s was answered with job %d, which is gone", d.key, d.at.Format(time.StampMilli), d.holder)
		case h.UniqueKey != d.key || (h.State.Final() && h.FinalizedAt.Before(d.at.Add(-uniqueTolerance))):
			v.problem("an insert of unique key %s at %s was answered with job %d (key %q, %s at %s), which did not hold it then",
				d.key, d.at.Format(time.StampMilli), h.ID, h.UniqueKey, h.State, h.FinalizedAt.Format(time.StampMilli))
		}
	}
	runFences := map[string][]int64{} // fenced job key → the fences it ran under
	for _, l := range lines(t, filepath.Join(c.dir, "runs.log")) {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue // a line cut short by a killed program
		}
		fence, _ := strconv.ParseInt(f[1], 10, 64)
		runFences[f[0]] = append(runFences[f[0]], fence)
	}
	var completed, fenced int
	for _, j := range rows {
		if j.Schedule != "" {
			continue
		}
		if j.State != rota.StateCompleted {
			v.problem("job %d (%s) ended %s after %d attempts: %s", j.ID, jobKeyOf(j), j.State, j.Attempt, lastError(j))
			continue
		}
		completed++
		if k := jobKeyOf(j); k[0] != 'o' {
			fenced++
			b, err := os.ReadFile(filepath.Join(c.dir, "fx", k))
			if got := strings.TrimSpace(string(b)); err != nil || got != strconv.FormatInt(j.Fence, 10) {
				v.problem("job %d (%s): its side effect holds fence %q (%v), its completing attempt had fence %d", j.ID, k, got, err, j.Fence)
			}
			var res builtin.ExecResult
			if err := json.Unmarshal(j.Result, &res); err != nil || strings.TrimSpace(res.Stdout) != fmt.Sprintf("fence %d", j.Fence) {
				v.problem("job %d (%s): its result %s is not the outcome of its final attempt, under fence %d", j.ID, k, j.Result, j.Fence)
			}
			fences := runFences[k]
			if slices.Sort(fences); len(fences) == 0 || fences[len(fences)-1] != j.Fence || len(slices.Compact(slices.Clone(fences))) != len(fences) {
				v.problem("job %d (%s): its runs had fences %v; each claim must give a new one, its final attempt's %d the greatest", j.ID, k, fences, j.Fence)
			}
		}
	}
	stale := lines(t, filepath.Join(c.dir, "stale.log"))
	overlaps := checkLimited(t, c, byKey, &v)
	cronSummary := checkCron(t, c, rows, &v)
	checkUnique(rows, &v)
	terms := c.leadership(t)
	// A token grows each time the lease changes hands; a node that stepped down and took the
	// lease back before anyone else did keeps its token.
	for i := 1; i < len(terms); i++ {
		if terms[i].token < terms[i-1].token || (terms[i].token == terms[i-1].token && terms[i].node != terms[i-1].node) {
			v.problem("leader %s's token %d follows %s's %d: tokens must grow when the lease changes hands", terms[i].node, terms[i].token, terms[i-1].node, terms[i-1].token)
		}
	}
	c.checkServicesInTerms(t, terms)
	v.summary = fmt.Sprintf("%d completed (%d with a fenced side effect; %d stale runs refused their write), "+
		"limited queue: %d runs, none overlapping; %s; %d leader terms",
		completed, fenced, len(stale), overlaps, cronSummary, len(terms))
	return v
}

// jobKeyOf is the key a suite job's program was given ($0), or "".
func jobKeyOf(j *rota.JobRow) string {
	var a builtin.ExecArgs
	if json.Unmarshal(j.Args, &a) != nil || len(a.Args) < 3 {
		return ""
	}
	return a.Args[2]
}

func lastError(j *rota.JobRow) string {
	if len(j.Errors) == 0 {
		return "no error"
	}
	return j.Errors[len(j.Errors)-1].Error
}

// lines reads a record file's lines; a file no program wrote is empty.
func lines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// checkLimited checks that every completed job of the limited queue ran, and that the runs that
// completed their job never ran at the same time, and returns how many there were. Runs of an attempt that did not complete (its
// node died or lost the job) may overlap a later one: the limit counts jobs the store holds as
// running, and such a run went on after the store gave the job to another.
func checkLimited(t *testing.T, c *cluster, byKey map[string]*rota.JobRow, v *chaosVerdict) int {
	t.Helper()
	type run struct {
		key        string
		start, end int64
	}
	runs := map[string]*run{}
	for _, l := range lines(t, filepath.Join(c.dir, "one.log")) {
		f := strings.Fields(l)
		if len(f) != 4 {
			continue // a line cut short by a killed program
		}
		j := byKey[f[1]]
		if j == nil || j.State != rota.StateCompleted || f[2] != strconv.FormatInt(j.Fence, 10) {
			continue
		}
		ns, _ := strconv.ParseInt(f[3], 10, 64)
		r := runs[f[1]]
		if r == nil {
			r = &run{key: f[1]}
			runs[f[1]] = r
		}
		if f[0] == "s" {
			r.start = ns
		} else {
			r.end = ns
		}
	}
	for k, j := range byKey {
		if r := runs[k]; k[0] == 'o' && j.State == rota.StateCompleted && (r == nil || r.start == 0 || r.end == 0) {
			v.problem("limited queue: %s (job %d) completed under fence %d without a whole run under it", k, j.ID, j.Fence)
		}
	}
	var sorted []*run
	for _, r := range runs {
		sorted = append(sorted, r)
	}
	slices.SortFunc(sorted, func(a, b *run) int { return int(a.start - b.start) })
	var prev *run
	for _, r := range sorted {
		if prev != nil && r.start < prev.end {
			v.problem("limited queue: %s (job %d) started %v before %s (job %d) ended: two running at once",
				r.key, byKey[r.key].ID, time.Duration(prev.end-r.start), prev.key, byKey[prev.key].ID)
		}
		if prev == nil || r.end > prev.end {
			prev = r
		}
	}
	return len(sorted)
}

// checkCron checks the schedule's occurrences: each planned once, none skipped, each ended
// completed (and ran once under its final fence), expired (it could not start within its second:
// a fault, or every slot busy) or cancelled (not started when the schedule was removed), and
// some completed.
func checkCron(t *testing.T, c *cluster, rows []*rota.JobRow, v *chaosVerdict) string {
	t.Helper()
	runs := map[string]int{} // "id fence" → lines
	for _, l := range lines(t, filepath.Join(c.dir, "cron.log")) {
		runs[l]++
	}
	byOcc := map[time.Time][]*rota.JobRow{}
	states := map[rota.State]int{}
	for _, j := range rows {
		if j.Schedule != chaosSchedule {
			continue
		}
		var meta map[string]string
		_ = json.Unmarshal(j.Metadata, &meta)
		occ, err := time.Parse(time.RFC3339, meta[planner.MetadataOccurrence])
		if err != nil {
			v.problem("cron job %d has no occurrence in its metadata %s", j.ID, j.Metadata)
			continue
		}
		byOcc[occ] = append(byOcc[occ], j)
		states[j.State]++
		switch j.State {
		case rota.StateCompleted:
			if n := runs[fmt.Sprintf("%d %d", j.ID, j.Fence)]; n != 1 {
				v.problem("cron occurrence %s (job %d) completed, and its final attempt ran %d times", occ.Format(time.TimeOnly), j.ID, n)
			}
		case rota.StateExpired:
		case rota.StateCancelled:
			// Removing the schedule cancels the occurrences that have not started, late ones
			// (still waiting for a free slot) included; nothing else may.
			if j.Attempt != 0 || lastError(j) != store.ScheduleRemovedError(chaosSchedule) {
				v.problem("cron occurrence %s (job %d) ended cancelled after %d attempts: %s",
					occ.Format(time.TimeOnly), j.ID, j.Attempt, lastError(j))
			}
		default:
			v.problem("cron occurrence %s (job %d) ended %s", occ.Format(time.TimeOnly), j.ID, j.State)
		}
	}
	var occs []time.Time
	for o, js := range byOcc {
		occs = append(occs, o)
		if len(js) > 1 {
			var ids []int64
			for _, j := range js {
				ids = append(ids, j.ID)
			}
			v.problem("cron occurrence %s planned %d times: jobs %v", o.Format(time.TimeOnly), len(js), ids)
		}
	}
	if len(occs) > 0 && states[rota.StateCompleted] == 0 {
		v.problem("none of the schedule's %d occurrences completed: a fault explains some expiring, not all", len(occs))
	}
	slices.SortFunc(occs, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(occs); i++ {
		if gap := occs[i].Sub(occs[i-1]); gap > time.Second {
			v.problem("cron occurrences from %s to %s were never planned (%v)", occs[i-1].Format(time.TimeOnly), occs[i].Format(time.TimeOnly), gap-time.Second)
		}
	}
	return fmt.Sprintf("cron: %d occurrences, each planned once (%d completed, %d expired, %d not started when the schedule was removed)",
		len(occs), states[rota.StateCompleted], states[rota.StateExpired], states[rota.StateCancelled])
}

// checkUnique checks that the holders of each unique key followed one another: the next was
// inserted only after the previous ended.
func checkUnique(rows []*rota.JobRow, v *chaosVerdict) {
	byKey := map[string][]*rota.JobRow{}
	for _, j := range rows {
		if strings.HasPrefix(j.UniqueKey, "uk") {
			byKey[j.UniqueKey] = append(byKey[j.UniqueKey], j)
		}
	}
	for k, js := range byKey {
		slices.SortFunc(js, func(a, b *rota.JobRow) int { return a.CreatedAt.Compare(b.CreatedAt) })
		for i := 1; i < len(js); i++ {
			prev, cur := js[i-1], js[i]
			if cur.CreatedAt.Before(prev.FinalizedAt.Add(-uniqueTolerance)) {
				v.problem("unique key %s: job %d inserted at %s while job %d held it (ended %s)", k, cur.ID,
					cur.CreatedAt.Format(time.StampMilli), prev.ID, prev.FinalizedAt.Format(time.StampMilli))
			}
		}
	}
}
