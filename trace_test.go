package rota

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// traced starts a node whose spans, and its client's, go to the returned recorder.
func traced(t *testing.T, work func(context.Context, *Job[testArgs]) error) (*bundle, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return setup(t, work, func(c *Config) { c.TracerProvider = tp }), rec
}

func spanNamed(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range rec.Ended() {
		if s.Name() == name {
			return s
		}
	}
	t.Fatalf("no span %q among %d", name, len(rec.Ended()))
	return nil
}

func attr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// An insert and the attempts of its job are one trace: the attempt's span is a child of the
// insert's, carried in the job's metadata, and the handler's context holds the attempt's span.
func TestInsertAndAttemptShareATrace(t *testing.T) {
	inHandler := make(chan trace.SpanContext, 1)
	b, rec := traced(t, func(ctx context.Context, j *Job[testArgs]) error {
		inHandler <- trace.SpanContextFromContext(ctx)
		return nil
	})
	res, err := b.client.Insert(context.Background(), testArgs{N: 1}, &InsertOpts{Metadata: map[string]string{"by": "test"}})
	if err != nil {
		t.Fatal(err)
	}
	b.event(t, EventJobCompleted)

	insert, work := spanNamed(t, rec, "insert default"), spanNamed(t, rec, "work test")
	if insert.SpanKind() != trace.SpanKindProducer || work.SpanKind() != trace.SpanKindConsumer {
		t.Errorf("kinds %v, %v", insert.SpanKind(), work.SpanKind())
	}
	if work.Parent().SpanID() != insert.SpanContext().SpanID() || work.SpanContext().TraceID() != insert.SpanContext().TraceID() {
		t.Fatalf("the attempt's span is not the insert's child: parent %v, insert %v", work.Parent(), insert.SpanContext())
	}
	if got := recv(t, inHandler); got.SpanID() != work.SpanContext().SpanID() {
		t.Errorf("the handler's context holds span %v, want the attempt's %v", got.SpanID(), work.SpanContext().SpanID())
	}
	id := strconv.FormatInt(res.Job.ID, 10)
	if attr(work, "messaging.message.id").AsString() != id || attr(work, "rota.job.state").AsString() != "completed" ||
		attr(insert, "messaging.message.id").AsString() != id {
		t.Errorf("attributes: insert %v, work %v", insert.Attributes(), work.Attributes())
	}
	var md map[string]json.RawMessage
	if err := json.Unmarshal(b.get(t, res.Job.ID).Metadata, &md); err != nil || string(md["by"]) != `"test"` || md[TraceMetadataKey] == nil {
		t.Fatalf("metadata %s (%v): the caller's keys and the trace context should both be there", b.get(t, res.Job.ID).Metadata, err)
	}
}

func TestFailedAttemptSpanHasErrorStatus(t *testing.T) {
	b, rec := traced(t, func(context.Context, *Job[testArgs]) error { return errors.New("no disk") })
	b.insert(t, testArgs{}, nil)
	b.event(t, EventJobFailed)
	work := spanNamed(t, rec, "work test")
	if work.Status().Code != codes.Error || work.Status().Description != "no disk" || attr(work, "rota.job.state").AsString() != "retryable" {
		t.Fatalf("status %+v, attributes %v", work.Status(), work.Attributes())
	}
}

// Without a tracer provider that records, nothing is added to a job.
func TestNoTracingLeavesMetadataAlone(t *testing.T) {
	b := setup(t, func(context.Context, *Job[testArgs]) error { return nil }, nil)
	job := b.insert(t, testArgs{}, nil)
	if md := b.get(t, job.ID).Metadata; len(md) != 0 {
		t.Fatalf("metadata %s, want none", md)
	}
}

// A node made before the program installs a tracer provider traces once one is installed: rota
// starts no span while the global provider is unset, and must notice when it no longer is.
func TestGlobalProviderInstalledLater(t *testing.T) {
	inHandler := make(chan trace.SpanContext, 2)
	b := setup(t, func(ctx context.Context, j *Job[testArgs]) error {
		inHandler <- trace.SpanContextFromContext(ctx)
		return nil
	}, nil)
	b.insert(t, testArgs{N: 1}, nil)
	b.event(t, EventJobCompleted)
	if sc := recv(t, inHandler); sc.IsValid() {
		t.Fatalf("before any provider the handler's context holds span %v", sc)
	}

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(noop.NewTracerProvider())
		_ = tp.Shutdown(context.Background())
	})
	b.insert(t, testArgs{N: 2}, nil)
	b.event(t, EventJobCompleted)
	work := spanNamed(t, rec, "work test")
	if got := recv(t, inHandler); got.SpanID() != work.SpanContext().SpanID() {
		t.Fatalf("the handler's context holds span %v, want the attempt's %v", got.SpanID(), work.SpanContext().SpanID())
	}
	spanNamed(t, rec, "insert default")
}

func TestWithTraceContext(t *testing.T) {
	carrier := propagation.MapCarrier{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	entry := `"rota.trace":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`
	for in, want := range map[string]string{
		``:                        `{` + entry + `}`,
		`{}`:                      `{` + entry + `}`,
		` { } `:                   `{` + entry + `}`,
		`{"a":1}`:                 `{` + entry + `,"a":1}`,
		`{"rota.trace":"theirs"}`: `{"rota.trace":"theirs"}`,
		`[1,2]`:                   `[1,2]`,
		`"text"`:                  `"text"`,
	} {
		got := string(withTraceContext([]byte(in), carrier))
		if got != want || !json.Valid([]byte(got)) {
			t.Errorf("withTraceContext(%q) = %q, want %q", in, got, want)
		}
	}
	// And back.
	ctx := traceParent(context.Background(), withTraceContext([]byte(`{"a":1}`), carrier))
	if sc := trace.SpanContextFromContext(ctx); sc.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || !sc.IsRemote() {
		t.Fatalf("extracted %v", sc)
	}
}

// Args that do not decode end their attempt's span too, with the reason; every span started
// is ended.
func TestBadArgsAttemptHasASpan(t *testing.T) {
	b, rec := traced(t, func(context.Context, *Job[testArgs]) error { return nil })
	res, err := b.client.Insert(context.Background(), RawArgs{KindName: "test", JSON: []byte(`{"n":"not a number"}`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.event(t, EventJobDiscarded)
	work := spanNamed(t, rec, "work test")
	if work.Status().Code != codes.Error || attr(work, "rota.job.state").AsString() != "discarded" {
		t.Fatalf("job %d: status %+v, attributes %v", res.Job.ID, work.Status(), work.Attributes())
	}
	if s, e := len(rec.Started()), len(rec.Ended()); s != e {
		t.Fatalf("%d spans started, %d ended", s, e)
	}
}

// An insert that the sampler drops still carries its trace context, so that its job's attempts
// are dropped too (a parent-based sampler) instead of starting traces of their own.
func TestUnsampledInsertStillCarriesItsContext(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	b := setup(t, func(context.Context, *Job[testArgs]) error { return nil }, func(c *Config) { c.TracerProvider = tp })
	job := b.insert(t, testArgs{}, nil)
	b.event(t, EventJobCompleted)
	var md map[string]json.RawMessage
	if err := json.Unmarshal(b.get(t, job.ID).Metadata, &md); err != nil || md[TraceMetadataKey] == nil {
		t.Fatalf("metadata %s (%v): want the trace context", b.get(t, job.ID).Metadata, err)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans recorded; the sampler drops the insert and, following it, the attempt", n)
	}
}

// A workflow is one trace: its insert is one span, and every step's attempt continues it.
func TestWorkflowIsOneTrace(t *testing.T) {
	b, rec := traced(t, func(context.Context, *Job[testArgs]) error { return nil })
	wf := NewWorkflow()
	wf.Add("a", testArgs{N: 1}, nil)
	wf.Add("b", testArgs{N: 2}, nil).After("a")
	wf.Add("c", testArgs{N: 3}, nil).After("a", "b")
	if _, err := b.client.InsertWorkflow(context.Background(), wf); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		b.event(t, EventJobCompleted)
	}
	insert := spanNamed(t, rec, "insert default")
	var works int
	for _, s := range rec.Ended() {
		if s.Name() != "work test" {
			continue
		}
		works++
		if s.SpanContext().TraceID() != insert.SpanContext().TraceID() || s.Parent().SpanID() != insert.SpanContext().SpanID() {
			t.Errorf("step span %v is not in the workflow's trace %v", s.SpanContext(), insert.SpanContext())
		}
	}
	if works != 3 {
		t.Fatalf("%d attempt spans, want 3", works)
	}
}
