package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// tracingEnabled reports whether the environment asks for traces, by OpenTelemetry's own
// variables: a collector's endpoint, and neither the SDK nor the trace exporter turned off.
func tracingEnabled() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(os.Getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// setupTracing returns the tracer provider the command's client and node use: one that sends
// spans over OTLP/HTTP when the environment names a collector (OTEL_EXPORTER_OTLP_ENDPOINT; the
// exporter reads the other OTEL_EXPORTER_OTLP_* variables itself), else nil, which leaves rota
// on the global provider, a no-op. The returned function flushes what is buffered; call it last.
func setupTracing(ctx context.Context, logger *slog.Logger) (trace.TracerProvider, func(), error) {
	if !tracingEnabled() {
		return nil, func() {}, nil
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := os.Getenv(v); p != "" && p != "http/protobuf" {
			return nil, nil, fmt.Errorf("tracing: %s=%s: rota sends OTLP over HTTP only; use http/protobuf (port 4318)", v, p)
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	// service.name defaults to rota; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
	res, err := resource.Merge(
		resource.NewSchemaless(attribute.String("service.name", "rota"), attribute.String("service.version", buildVersion().Version)),
		resource.Environment())
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			logger.Warn("rota: sending the last spans failed", "error", err)
		}
	}, nil
}
