package rota

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/rotahq/rota/store"
)

// Tracing. An insert call is a producer span, "insert QUEUE" (or "insert" for a batch over
// several queues); each attempt of a job is a consumer span, "work KIND", in the same trace: the
// insert writes its span's context into the job's metadata under TraceMetadataKey, and the
// attempt continues it. A handler's context carries its attempt's span, so spans the handler
// starts nest under it. Without a TracerProvider in the config rota uses the global one
// (otel.SetTracerProvider), which does nothing until the program installs one.

// TraceMetadataKey is the key of a job's metadata object that carries the trace context of the
// insert that made the job (W3C traceparent and tracestate). Metadata that is not a JSON object,
// or that has the key already, is left as it is.
const TraceMetadataKey = "rota.trace"

// tracerName is the instrumentation scope of rota's spans.
const tracerName = "github.com/rotahq/rota"

var (
	traceKeyJSON = []byte(strconv.Quote(TraceMetadataKey))
	propagator   = propagation.TraceContext{}
	// Shared, so that starting a span that records nothing allocates as little as it can.
	producerSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindProducer)}
	consumerSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}
)

// tracer starts rota's spans. One made from the global provider starts none while the program
// has installed no provider and the context carries no trace: the global provider's placeholder
// spans record nothing and carry nothing then, but each costs allocations, and an attempt's
// allocations are what a drain's garbage collector works for.
type tracer struct {
	trace.Tracer
	global bool // made from the global provider
}

// unsetProvider is the global provider as it is before a program installs one: a package's
// variables are set before any init function of the packages that import it runs.
var unsetProvider = otel.GetTracerProvider()

// noSpan is the span that does nothing: the one of a context without a span.
var noSpan = trace.SpanFromContext(context.Background())

func newTracer(tp trace.TracerProvider) tracer {
	if tp == nil {
		return tracer{Tracer: otel.GetTracerProvider().Tracer(tracerName), global: true}
	}
	return tracer{Tracer: tp.Tracer(tracerName)}
}

// Start starts a span, unless there is nothing to record or carry (see tracer).
func (t tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if t.global && otel.GetTracerProvider() == unsetProvider && !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, noSpan
	}
	return t.Tracer.Start(ctx, name, opts...)
}

// startInsert starts the span of one insert call and writes its context into the jobs'
// metadata.
func (c *Client) startInsert(ctx context.Context, params []store.InsertParams) (context.Context, trace.Span) {
	if len(params) == 0 {
		return ctx, noSpan
	}
	name := "insert"
	queue := params[0].Queue
	for _, p := range params[1:] {
		if p.Queue != queue {
			queue = ""
			break
		}
	}
	if queue != "" {
		name += " " + queue
	}
	ctx, span := c.tracer.Start(ctx, name, producerSpan...)
	if !span.SpanContext().IsValid() {
		return ctx, span // no tracer provider: nothing to record, nothing to carry
	}
	if span.IsRecording() {
		attrs := []attribute.KeyValue{
			attribute.String("messaging.system", "rota"),
			attribute.String("messaging.operation.type", "send"),
			attribute.String("messaging.operation.name", "insert"),
		}
		if queue != "" {
			attrs = append(attrs, attribute.String("messaging.destination.name", queue))
		}
		if len(params) == 1 {
			attrs = append(attrs, attribute.String("rota.job.kind", params[0].Kind))
		} else {
			attrs = append(attrs, attribute.Int("messaging.batch.message_count", len(params)))
		}
		span.SetAttributes(attrs...)
	}
	// Carried even when this span is not sampled, so that the attempts follow the same sampling
	// decision (a parent-based sampler) instead of starting traces of their own.
	carrier := propagation.MapCarrier{}
	propagator.Inject(ctx, carrier)
	if len(carrier) > 0 {
		for i := range params {
			params[i].Metadata = withTraceContext(params[i].Metadata, carrier)
		}
	}
	return ctx, span
}

// endInsert ends an insert's span with what the insert did.
func endInsert(span trace.Span, res []store.InsertResult, err error) {
	if span.IsRecording() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		} else if len(res) == 1 && res[0].Job != nil {
			span.SetAttributes(attribute.String("messaging.message.id", strconv.FormatInt(res[0].Job.ID, 10)),
				attribute.Bool("rota.job.duplicate", res[0].Duplicate))
		}
	}
	span.End()
}

// withTraceContext adds carrier under TraceMetadataKey to md, a JSON object or nothing. It
// splices the key in rather than decoding and encoding md, so the caller's bytes stay as they
// were.
func withTraceContext(md []byte, carrier propagation.MapCarrier) []byte {
	value, err := json.Marshal(map[string]string(carrier))
	if err != nil {
		return md
	}
	trimmed := bytes.TrimSpace(md)
	entry := append(append(append([]byte{}, traceKeyJSON...), ':'), value...)
	switch {
	case len(trimmed) == 0:
		return append(append([]byte{'{'}, entry...), '}')
	case trimmed[0] != '{' || bytes.Contains(trimmed, traceKeyJSON):
		return md
	case len(bytes.TrimSpace(trimmed[1:len(trimmed)-1])) == 0: // {}
		return append(append([]byte{'{'}, entry...), '}')
	default:
		out := append([]byte{'{'}, entry...)
		out = append(out, ',')
		return append(out, trimmed[1:]...)
	}
}

// traceParent returns ctx carrying the trace context the insert of a job left in its metadata,
// for the attempt's span to continue; ctx itself when there is none.
func traceParent(ctx context.Context, md []byte) context.Context {
	if !bytes.Contains(md, traceKeyJSON) {
		return ctx // the common case, decided without decoding
	}
	var holder map[string]json.RawMessage
	if json.Unmarshal(md, &holder) != nil {
		return ctx
	}
	var carrier propagation.MapCarrier
	if json.Unmarshal(holder[TraceMetadataKey], &carrier) != nil {
		return ctx
	}
	return propagator.Extract(ctx, carrier)
}

// startAttempt starts the span of one attempt of e's job, in the trace of its insert.
func (n *Node) startAttempt(ctx context.Context, e *execution) (context.Context, trace.Span) {
	row := e.row
	ctx, span := n.tracer.Start(traceParent(ctx, row.Metadata), e.reg.spanName, consumerSpan...)
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("messaging.system", "rota"),
			attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.operation.name", "work"),
			attribute.String("messaging.destination.name", row.Queue),
			attribute.String("messaging.message.id", strconv.FormatInt(row.ID, 10)),
			attribute.String("rota.job.kind", row.Kind),
			attribute.Int("rota.job.attempt", row.Attempt),
			attribute.String("rota.node", n.cfg.ID),
		)
	}
	return ctx, span
}

// endAttempt ends an attempt's span with its outcome.
func endAttempt(span trace.Span, o store.Outcome) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("rota.job.state", string(o.State)))
		if o.Error != nil {
			span.SetAttributes(attribute.String("error.type", "rota.attempt_failed"))
			span.SetStatus(codes.Error, o.Error.Error)
		}
	}
	span.End()
}
