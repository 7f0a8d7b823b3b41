package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// redactingExporter passes every span through a redactor before it leaves
// the process, as every log line is: an attribute, an event or a status that
// quotes a key (a path a client put its key in, an error that quotes one
// back) reaches the collector without it.
type redactingExporter struct {
	sdktrace.SpanExporter
	redact func(string) string
}

func (e redactingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	out := make([]sdktrace.ReadOnlySpan, len(spans))
	for i, s := range spans {
		out[i] = redactedSpan{ReadOnlySpan: s, redact: e.redact}
	}
	return e.SpanExporter.ExportSpans(ctx, out)
}

// redactedSpan is a span whose strings are read through a redactor.
type redactedSpan struct {
	sdktrace.ReadOnlySpan
	redact func(string) string
}

func (s redactedSpan) Name() string { return s.redact(s.ReadOnlySpan.Name()) }

func (s redactedSpan) Attributes() []attribute.KeyValue {
	return redactAttributes(s.ReadOnlySpan.Attributes(), s.redact)
}

func (s redactedSpan) Events() []sdktrace.Event {
	events := s.ReadOnlySpan.Events()
	out := make([]sdktrace.Event, len(events))
	for i, e := range events {
		e.Name = s.redact(e.Name)
		e.Attributes = redactAttributes(e.Attributes, s.redact)
		out[i] = e
	}
	return out
}

func (s redactedSpan) Status() sdktrace.Status {
	st := s.ReadOnlySpan.Status()
	st.Description = s.redact(st.Description)
	return st
}

func redactAttributes(attrs []attribute.KeyValue, redact func(string) string) []attribute.KeyValue {
	out := make([]attribute.KeyValue, len(attrs))
	for i, a := range attrs {
		switch a.Value.Type() {
		case attribute.STRING:
			a.Value = attribute.StringValue(redact(a.Value.AsString()))
		case attribute.STRINGSLICE:
			vs := a.Value.AsStringSlice()
			for j := range vs {
				vs[j] = redact(vs[j])
			}
			a.Value = attribute.StringSliceValue(vs)
		}
		out[i] = a
	}
	return out
}
