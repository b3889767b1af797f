package builtin

import (
	"testing"

	"github.com/rotahq/rota"
)

// rota sets the run's identity last, so that a job's own env cannot fake it: a program that
// reads its variables with getenv (printenv, C, Go, Python), which takes the first of two
// entries of one name, must see the fence of its claim, not the job's.
func TestExecJobEnvCannotFakeTheRunsIdentity(t *testing.T) {
	w := newExecWorker(Config{MaxResultBytes: rota.MaxResultBytesDefault})
	row := &rota.JobRow{ID: 42, Attempt: 3, Fence: 1000}
	res, err := w.runAs(t.Context(), ExecArgs{
		Program: "printenv",
		Args:    []string{EnvJobID, EnvJobAttempt, EnvJobFence},
		Env:     map[string]string{EnvJobFence: "999999", EnvJobID: "-7", EnvJobAttempt: "1"},
	}, jobEnv(row))
	if err != nil {
		t.Fatal(err)
	}
	if want := "42\n3\n1000\n"; res.Stdout != want {
		t.Fatalf("the program saw %q, want %q (the run's id, attempt and fence)", res.Stdout, want)
	}
}
