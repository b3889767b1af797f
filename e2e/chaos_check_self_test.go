package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/builtin"
)

// checkedRow is a completed job as the chaos load inserts it, its program's $0 key, whose
// final attempt ran under fence and said so in its result.
func checkedRow(t *testing.T, id int64, key string, fence int64) *rota.JobRow {
	t.Helper()
	args, err := json.Marshal(builtin.ExecArgs{Program: "sh", Args: []string{"-c", fencedScript, key, "/dir"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := json.Marshal(builtin.ExecResult{Stdout: "fence 1\n"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	return &rota.JobRow{ID: id, State: rota.StateCompleted, Args: args, Result: res, Fence: fence, Attempt: 1,
		CreatedAt: now, FinalizedAt: now}
}

// wantProblem fails unless checkChaos named a problem containing want, and only that one.
func wantProblem(t *testing.T, v chaosVerdict, want string) {
	t.Helper()
	if len(v.problems) != 1 || !strings.Contains(v.problems[0], want) {
		t.Errorf("checkChaos found %q, want only %q", v.problems, want)
	}
}

// A job the load inserted whose id now holds another job (a store that gave the id twice) is
// a lost job, though a job has that id.
func TestChaosCheckSeesALostJobWhoseIDWasReused(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "fx"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"fx/p9": "1\n", "runs.log": "p9 1\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	v := checkChaos(t, &cluster{t: t, dir: dir}, []*rota.JobRow{checkedRow(t, 5, "p9", 1)}, map[int64]string{5: "p5"}, nil)
	wantProblem(t, v, "job 5 was inserted as p5 and is now p9")
}

// A completed job of the limited queue must have run.
func TestChaosCheckSeesALimitedJobThatNeverRan(t *testing.T) {
	v := checkChaos(t, &cluster{t: t, dir: t.TempDir()}, []*rota.JobRow{checkedRow(t, 1, "o1", 1)}, map[int64]string{1: "o1"}, nil)
	wantProblem(t, v, "o1 (job 1) completed under fence 1 without a whole run under it")
}
