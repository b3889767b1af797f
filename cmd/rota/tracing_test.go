package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP trace receiver: it hands every span it is sent to spans.
func collector(t *testing.T) (url string, spans <-chan *tracepb.Span) {
	ch := make(chan *tracepb.Span, 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					ch <- s
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, ch
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, rota enqueue and rota serve send their spans there, and
// the job's attempt is in the trace of the command that enqueued it.
func TestTracesReachTheCollector(t *testing.T) {
	url, spans := collector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50") // ms: export soon, not every 5 s
	e := newEnv(t)
	startServe(t, e)
	e.run("enqueue", "exec", "--wait", "--timeout", "30s", "--", "echo", "traced").ok(t)

	var insert, work *tracepb.Span
	timeout := time.After(20 * time.Second)
	for insert == nil || work == nil {
		select {
		case s := <-spans:
			switch s.Name {
			case "insert default":
				insert = s
			case "work exec":
				work = s
			}
		case <-timeout:
			t.Fatalf("spans received: insert %v, work %v", insert != nil, work != nil)
		}
	}
	if !bytes.Equal(work.TraceId, insert.TraceId) || !bytes.Equal(work.ParentSpanId, insert.SpanId) {
		t.Fatalf("the attempt's span is not the insert's child: insert %x/%x, work %x parent %x",
			insert.TraceId, insert.SpanId, work.TraceId, work.ParentSpanId)
	}
}

func TestTracingRefusesGRPC(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	e := newEnv(t)
	e.run("jobs", "list").fails(t, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc: rota sends OTLP over HTTP only")
}
