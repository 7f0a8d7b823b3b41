package proxy

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracer makes the gateway's spans; it is OpenTelemetry's global one, a
// no-op until internal/telemetry installs an exporter.
var tracer = otel.Tracer("github.com/focusgate/focusgate/proxy")

// traceRequest is the server span of a proxied request, continuing the
// caller's trace (traceparent) when it sends one. The pipeline's and the
// pruner's spans, and the upstream call's, are its children. It is in the
// chain only with Options.Tracing.
func (s *Server) traceRequest(c *gin.Context) {
	r := c.Request
	ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	route, pattern := routeLabel(c), ""
	if rt := infoFrom(r.Context()).match.Route; rt != nil {
		pattern = rt.Pattern
	}
	name := r.Method + " " + pattern
	if pattern == "" {
		name = r.Method
	}
	ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("http.route", pattern),
			attribute.String("focusgate.route", route),
		))
	defer span.End()
	c.Request = r.WithContext(ctx)
	c.Next()

	// The path is recorded once authentication has looked at it: a path
	// that holds a gateway key is not. (The exporter also scrubs every
	// attribute of the keys it knows, as the log does.)
	if !infoFrom(ctx).keyInPath {
		span.SetAttributes(attribute.String("url.path", r.URL.Path))
	}

	status := answered(c)
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	h := c.Writer.Header()
	if st := h.Get(HeaderStatus); st != "" {
		span.SetAttributes(attribute.String("focusgate.status", st))
		for name, key := range map[string]string{HeaderTokensBefore: "focusgate.tokens_before", HeaderTokensAfter: "focusgate.tokens_after"} {
			if n, err := strconv.Atoi(h.Get(name)); err == nil {
				span.SetAttributes(attribute.Int(key, n))
			}
		}
		if cache := h.Get(HeaderCache); cache != "" {
			span.SetAttributes(attribute.String("focusgate.cache", cache))
		}
	}
}

// tracingTransport is the upstream call's client span; it hands the trace
// on to the upstream in W3C trace context headers, replacing any the client
// sent (the gateway's span is now their parent). The span ends when the
// response headers arrive: a stream's body is not waited for.
type tracingTransport struct{ base http.RoundTripper }

func (t tracingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, span := tracer.Start(req.Context(), req.Method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("http.request.method", req.Method),
			attribute.String("server.address", req.URL.Hostname()),
			attribute.String("url.full", req.URL.Scheme+"://"+req.URL.Host+req.URL.Path),
		))
	defer span.End()
	req = req.WithContext(ctx)
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "upstream unreachable")
		return resp, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 500 {
		span.SetStatus(codes.Error, resp.Status)
	}
	return resp, nil
}
