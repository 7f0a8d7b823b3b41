// Package telemetry exports focusgate's traces over OTLP when the standard
// OpenTelemetry variables ask for it, so that a platform team sees in each
// request's trace where the time went: detection, the cache, the retriever
// call and the upstream. With neither OTEL_EXPORTER_OTLP_ENDPOINT nor
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set it does nothing: the global tracer
// stays OpenTelemetry's no-op one and the gateway adds no span handling.
package telemetry

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Setup installs an OTLP/HTTP trace exporter as the global tracer provider,
// with W3C trace context as the global propagator, when getenv names an
// endpoint. It reads OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as given),
// else OTEL_EXPORTER_OTLP_ENDPOINT (with /v1/traces appended),
// OTEL_EXPORTER_OTLP_HEADERS (k=v,k2=v2) and OTEL_SERVICE_NAME (default
// focusgate). on is false when tracing stays off. shutdown flushes the spans
// still buffered and puts the previous provider back; call it once the last
// request is done.
func Setup(getenv func(string) string) (on bool, shutdown func(context.Context) error, err error) {
	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		if base := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); base != "" {
			endpoint = strings.TrimSuffix(base, "/") + "/v1/traces"
		}
	}
	if endpoint == "" {
		return false, func(context.Context) error { return nil }, nil
	}
	if _, err := url.Parse(endpoint); err != nil {
		return false, nil, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: %w", err)
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(endpoint)}
	if h := parseHeaders(getenv("OTEL_EXPORTER_OTLP_HEADERS")); len(h) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(h))
	}
	exporter, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		return false, nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	name := getenv("OTEL_SERVICE_NAME")
	if name == "" {
		name = "focusgate"
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", name))),
		// A trace its caller sampled is recorded; one that starts here is.
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())),
	)
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return true, func(ctx context.Context) error {
		defer func() {
			otel.SetTracerProvider(prevTP)
			otel.SetTextMapPropagator(prevProp)
		}()
		return tp.Shutdown(ctx)
	}, nil
}

// parseHeaders reads OTEL_EXPORTER_OTLP_HEADERS: comma-separated key=value
// pairs, values percent-encoded.
func parseHeaders(s string) map[string]string {
	h := map[string]string{}
	for pair := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok || strings.TrimSpace(k) == "" {
			continue
		}
		if u, err := url.QueryUnescape(strings.TrimSpace(v)); err == nil {
			v = u
		}
		h[strings.TrimSpace(k)] = v
	}
	return h
}
