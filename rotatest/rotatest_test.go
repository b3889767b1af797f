package rotatest_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota"
	"github.com/rotahq/rota/rotatest"
	"github.com/rotahq/rota/store/sqlite"
)

type greetArgs struct {
	Name string `json:"name"`
}

func (greetArgs) Kind() string { return "greet" }

type greeter struct{}

func (greeter) Work(ctx context.Context, job *rota.Job[greetArgs]) error {
	switch job.Args.Name {
	case "":
		return rota.Cancel(errors.New("no name"))
	case "panic":
		panic("boom")
	}
	return job.SetResult(map[string]any{"greeting": "hello " + job.Args.Name, "attempt": job.Attempt})
}

func TestWorkRunsAWorkerOnAHandBuiltJob(t *testing.T) {
	res := rotatest.Work(t, greeter{}, greetArgs{Name: "ada"}, nil)
	if res.Err != nil || string(res.Result) != `{"attempt":1,"greeting":"hello ada"}` {
		t.Fatalf("result %s, err %v", res.Result, res.Err)
	}
	if res.Job.Kind != "greet" || res.Job.State != rota.StateRunning || res.Job.Queue != rota.QueueDefault {
		t.Fatalf("job %+v", res.Job)
	}
	if res := rotatest.Work(t, greeter{}, greetArgs{Name: "ada"}, &rotatest.WorkOpts{Attempt: 3}); string(res.Result) != `{"attempt":3,"greeting":"hello ada"}` {
		t.Fatalf("third attempt: %s", res.Result)
	}
	if res := rotatest.Work(t, greeter{}, greetArgs{}, nil); res.Err == nil || !strings.Contains(res.Err.Error(), "no name") {
		t.Fatalf("cancel: %v", res.Err)
	}
	if res := rotatest.Work(t, greeter{}, greetArgs{Name: "panic"}, nil); res.Err == nil || !strings.Contains(res.Err.Error(), "panicked: boom") {
		t.Fatalf("panic: %v", res.Err)
	}
}

// A Job built by hand takes a result, where it used to panic.
func TestSetResultOnAHandBuiltJob(t *testing.T) {
	j := &rota.Job[greetArgs]{Args: greetArgs{Name: "x"}}
	if err := j.SetResult(42); err != nil || string(j.Result) != "42" {
		t.Fatalf("SetResult: %v, result %s", err, j.Result)
	}
}

func client(t *testing.T) *rota.Client {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "rota.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return rota.NewClient(st, nil)
}

func TestRequireInsertedFindsTheJob(t *testing.T) {
	c := client(t)
	at := time.Now().Add(time.Hour)
	if _, err := c.Insert(t.Context(), rota.RawArgs{KindName: "greet", JSON: []byte(`{ "name" : "ada" }`)}, &rota.InsertOpts{Queue: "mail", RunAt: at}); err != nil {
		t.Fatal(err)
	}
	j := rotatest.RequireInserted(t, c, greetArgs{Name: "ada"}, &rotatest.Expect{Queue: "mail", State: rota.StateScheduled, ScheduledAfter: time.Now()})
	if j.Queue != "mail" {
		t.Fatalf("job %+v", j)
	}
	rotatest.RequireNotInserted(t, c, greetArgs{Name: "bob"}, nil)

	msg := failure(t, func(tb testing.TB) { rotatest.RequireInserted(tb, c, greetArgs{Name: "bob"}, nil) })
	if !strings.Contains(msg, `no job of kind greet with args {"name":"bob"} was inserted`) || !strings.Contains(msg, `args {"name":"ada"}`) {
		t.Fatalf("failure message:\n%s", msg)
	}
	msg = failure(t, func(tb testing.TB) {
		rotatest.RequireInserted(tb, c, greetArgs{Name: "ada"}, &rotatest.Expect{Queue: "other"})
	})
	if !strings.Contains(msg, "(queue other)") {
		t.Fatalf("failure message:\n%s", msg)
	}
	msg = failure(t, func(tb testing.TB) { rotatest.RequireNotInserted(tb, c, greetArgs{Name: "ada"}, nil) })
	if !strings.Contains(msg, "should not have been") {
		t.Fatalf("failure message:\n%s", msg)
	}
}

// failure runs check with a testing.TB that records a Fatalf instead of failing t, and returns
// what it said ("" if check passed).
func failure(t *testing.T, check func(testing.TB)) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r)
	}()
	<-done
	return r.msg
}

type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
