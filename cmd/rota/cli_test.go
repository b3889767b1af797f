package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/syncbuf"
)

// A mistyped subcommand is an error naming the nearest ones, not a help page and exit status 0.
func TestMistypedSubcommandFailsWithASuggestion(t *testing.T) {
	e := newEnv(t)
	e.run("jobs", "lst").fails(t, `unknown command "lst" for "rota jobs"; did you mean "list"?`)
	e.run("queues", "lsit").fails(t, `did you mean "list"?`)
	e.run("cron", "shwo").fails(t, `did you mean "show"?`)
	e.run("workflows", "lst").fails(t, `unknown command "lst" for "rota workflows"; did you mean "list"?`)
	e.run("cron", "frobnicate").fails(t, `unknown command "frobnicate" for "rota cron"; see rota cron --help`)
	if r := e.run("jobs").ok(t); !strings.Contains(r.stdout, "Available Commands") {
		t.Fatalf("rota jobs alone prints no help:\n%s", r.stdout)
	}
}

func TestEnqueueWithoutAKindSaysWhatIsMissing(t *testing.T) {
	newEnv(t).run("enqueue").fails(t, "enqueue needs the job's kind: rota enqueue KIND")
}

// Run in a directory without a store, commands that read or steer jobs say so and create
// nothing; enqueue and cron add may be the first to use a store.
func TestReadingCommandsNeverCreateAStore(t *testing.T) {
	e := newBareEnv(t)
	path := strings.TrimPrefix(e.store, "sqlite:")
	for _, args := range [][]string{
		{"jobs", "list"}, {"jobs", "show", "1"}, {"jobs", "cancel", "1"}, {"jobs", "retry", "1"},
		{"jobs", "delete", "1"}, {"queues", "list"}, {"queues", "pause", "default"},
		{"cron", "list"}, {"cron", "show", "x"}, {"cron", "remove", "x"}, {"status"},
		{"workflows", "list"}, {"workflows", "show", "w"}, {"workflows", "cancel", "w"}, {"workflows", "retry", "w"},
	} {
		e.run(args...).fails(t, "no store at "+e.store)
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("rota %s left a store at %s (%v)", strings.Join(args, " "), path, err)
		}
	}
	e.run("enqueue", "exec", "--", "true").ok(t)
	e.run("jobs", "list").ok(t)
}

// --args @FILE and --args - carry args larger than one command-line argument may be (128 KiB
// on Linux).
func TestArgsFromAFileAndFromStdin(t *testing.T) {
	e := newEnv(t)
	big := strings.Repeat("x", 300<<10)
	file := filepath.Join(t.TempDir(), "args.json")
	if err := os.WriteFile(file, []byte(`{"program": "echo", "args": ["`+big+`"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e.run("enqueue", "exec", "--args", "@"+file).ok(t)

	var stdout, stderr syncbuf.Buffer
	a := newApp(&stdout, &stderr)
	a.stdin = strings.NewReader(`{"program": "echo", "args": ["from stdin & more"]}`)
	if code := a.run(t.Context(), []string{"--store", e.store, "enqueue", "exec", "--args", "-"}); code != 0 {
		t.Fatalf("--args -: exit %d: %s", code, stderr.String())
	}

	for id, want := range map[string]string{"1": big, "2": "from stdin & more"} {
		var job struct {
			Args struct {
				Args []string `json:"args"`
			} `json:"args"`
		}
		e.run("jobs", "show", id, "-o", "json").ok(t).decode(t, &job)
		if len(job.Args.Args) != 1 || job.Args.Args[0] != want {
			t.Fatalf("job %s has args %.80q…, want %.80q…", id, job.Args.Args, want)
		}
	}
	e.run("enqueue", "exec", "--args", "@"+filepath.Join(t.TempDir(), "none.json")).fails(t, "no such file")
	empty := filepath.Join(t.TempDir(), "empty.json")
	_ = os.WriteFile(empty, nil, 0o600)
	e.run("enqueue", "exec", "--args", "@"+empty).fails(t, "is empty")
}

// Args from the CLI are stored as written, and -o json shows them so.
func TestCLIArgsStoredAsWritten(t *testing.T) {
	e := newEnv(t)
	e.run("enqueue", "exec", "--", "sh", "-c", "a > b && c < d").ok(t)
	r := e.run("jobs", "show", "1", "-o", "json").ok(t)
	if !strings.Contains(r.stdout, `"a > b && c < d"`) {
		t.Fatalf("args not as written:\n%s", r.stdout)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatal(err)
	}
}
