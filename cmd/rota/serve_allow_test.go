package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `rota serve --allow-program scripts/backup.sh` promises that exec jobs run only that program.
// A relative program with a slash runs relative to the job's own "dir", so an entry matched as a
// string would let a job run a file of that name anywhere on the node: serve refuses such an
// entry at start (or, were it taken, the job is refused): the other file never runs.
func TestAllowProgramRefusesARelativePath(t *testing.T) {
	e := newEnv(t)
	evil := t.TempDir()
	if err := os.MkdirAll(filepath.Join(evil, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(evil, "scripts", "backup.sh"), []byte("#!/bin/sh\necho PWNED\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- newApp(&stdout, &stderr).run(ctx, []string{"--store", e.store, "serve", "--allow-program", "scripts/backup.sh"})
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stderr.String(), "rota: serving") {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", stderr.String())
		}
		select {
		case code := <-done:
			done <- code
			if code != 0 {
				return // refusing a relative --allow-program at start is a fix
			}
		default:
		}
		time.Sleep(10 * time.Millisecond)
	}

	r := e.run("enqueue", "exec", "--wait", "--timeout", "30s", "--max-attempts", "1",
		"--args", `{"dir":"`+evil+`"}`, "--", "scripts/backup.sh")
	if strings.Contains(r.stdout, "PWNED") {
		t.Fatalf("a job ran %s/scripts/backup.sh, a program not on the allow-list (exit %d, stdout %q)", evil, r.code, r.stdout)
	}
}
