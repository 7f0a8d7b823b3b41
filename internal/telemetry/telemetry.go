// Package telemetry exports focusgate's traces over OTLP when the standard
// OpenTelemetry variables ask for it, so that a platform team sees in each
// request's trace where the time went: detection, the cache, the retriever
// call and the upstream. With neither OTEL_EXPORTER_OTLP_ENDPOINT nor
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set it does nothing: the global tracer
// stays OpenTelemetry's no-op one and the gateway adds no span handling.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"
)

// Setup installs an OTLP/HTTP trace exporter as the global tracer provider,
// with W3C trace context as the global propagator, when getenv names an
// endpoint. It reads OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as given),
// else OTEL_EXPORTER_OTLP_ENDPOINT (with /v1/traces appended),
// OTEL_EXPORTER_OTLP_HEADERS (k=v,k2=v2) and OTEL_SERVICE_NAME (default
// focusgate); an endpoint that is not an http or https URL is an error
// naming its variable. OpenTelemetry's errors (a failed export) go to log,
// at most one line per 30 seconds. on is false when tracing stays
// off. shutdown flushes the spans still buffered, giving up when its
// context ends, and puts the previous provider and error handler back; call
// it once the last request is done.
//
// Every span goes through redact before it is exported, as the log's lines
// do (nil: as it is).
func Setup(getenv func(string) string, log *slog.Logger, redact func(string) string) (on bool, shutdown func(context.Context) error, err error) {
	variable := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	endpoint := getenv(variable)
	if endpoint == "" {
		variable = "OTEL_EXPORTER_OTLP_ENDPOINT"
		endpoint = getenv(variable)
	}
	if endpoint == "" {
		return false, func(context.Context) error { return nil }, nil
	}
	if err := checkEndpoint(endpoint); err != nil {
		return false, nil, fmt.Errorf("%s: %w", variable, err)
	}
	if variable == "OTEL_EXPORTER_OTLP_ENDPOINT" {
		endpoint = strings.TrimSuffix(endpoint, "/") + "/v1/traces"
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(endpoint)}
	if h := parseHeaders(getenv("OTEL_EXPORTER_OTLP_HEADERS")); len(h) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(h))
	}
	exporter, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		return false, nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	var spans sdktrace.SpanExporter = exporter
	if redact != nil {
		spans = redactingExporter{SpanExporter: exporter, redact: redact}
	}
	name := getenv("OTEL_SERVICE_NAME")
	if name == "" {
		name = "focusgate"
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(spans),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", name))),
		// A trace its caller sampled is recorded; one that starts here is.
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())),
	)
	prevProp, prevErrs := otel.GetTextMapPropagator(), otel.GetErrorHandler()
	otel.SetErrorHandler(newErrorLog(log, errorLogInterval, time.Now))
	installForwarding.Do(func() { otel.SetTracerProvider(forwardingProvider{}) })
	prevTP := current.Swap(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return true, func(ctx context.Context) error {
		defer func() {
			current.CompareAndSwap(tp, prevTP)
			otel.SetTextMapPropagator(prevProp)
			otel.SetErrorHandler(prevErrs)
		}()
		return tp.Shutdown(ctx)
	}, nil
}

// The packages take their tracers from OpenTelemetry's global provider when
// they start, and the global provider hands a tracer obtained before it was
// set to the first provider set, for good. The provider installed as the
// global one is therefore a forwarding one, installed once, whose tracers
// start each span with the provider of the Setup in force (current), or
// none: a second Setup in one process (a second gateway in a test) takes
// over the tracers obtained before it.
var (
	installForwarding sync.Once
	current           atomic.Pointer[sdktrace.TracerProvider]
)

type forwardingProvider struct{ embedded.TracerProvider }

func (forwardingProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return forwardingTracer{name: name, opts: opts}
}

type forwardingTracer struct {
	embedded.Tracer
	name string
	opts []trace.TracerOption
}

func (t forwardingTracer) Start(ctx context.Context, spanName string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if tp := current.Load(); tp != nil {
		return tp.Tracer(t.name, t.opts...).Start(ctx, spanName, opts...)
	}
	return noop.NewTracerProvider().Tracer(t.name).Start(ctx, spanName, opts...)
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

// checkEndpoint accepts an http or https URL with a host: the exporter would
// otherwise start and fail every export (a bare "host:port" parses as a URL
// of scheme "host").
func checkEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		// Not url.Error's text, which quotes the value (and a password
		// in it).
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("not a URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("want an http:// or https:// URL with a host, e.g. http://otel-collector:4318, got scheme %q and host %q", u.Scheme, u.Host)
	}
	return nil
}

// errorLogInterval is the least time between two log lines about
// OpenTelemetry errors: a collector that is down fails every export, and
// one line says so as well as hundreds.
const errorLogInterval = 30 * time.Second

// errorLog is OpenTelemetry's error handler: it logs an error at warning
// level, then at most one more per interval, saying how many were left out
// in between.
type errorLog struct {
	log   *slog.Logger
	every time.Duration
	now   func() time.Time

	mu         sync.Mutex
	last       time.Time // of the last line; zero before the first
	suppressed int
}

var _ otel.ErrorHandler = (*errorLog)(nil)

func newErrorLog(log *slog.Logger, every time.Duration, now func() time.Time) *errorLog {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &errorLog{log: log, every: every, now: now}
}

// Handle implements otel.ErrorHandler.
func (l *errorLog) Handle(err error) {
	l.mu.Lock()
	now := l.now()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	suppressed := l.suppressed
	l.last, l.suppressed = now, 0
	l.mu.Unlock()
	l.log.Warn("OpenTelemetry error (traces may be lost)", "err", err, "not_logged_since_last", suppressed, "log_interval", l.every)
}
