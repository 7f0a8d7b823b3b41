package prune

import (
	"context"

	"github.com/focusgate/focusgate"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracer makes the pruner's spans (the cache look-up, each retriever call);
// it is OpenTelemetry's global one, a no-op unless the gateway exports
// traces.
var tracer = otel.Tracer("github.com/focusgate/focusgate/prune")

// startChat opens the span of one call to a retriever model, named and
// described by OpenTelemetry's GenAI conventions.
func startChat(ctx context.Context, provider, model string) (context.Context, trace.Span) {
	return tracer.Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.provider.name", provider),
			attribute.String("gen_ai.system", provider),
			attribute.String("gen_ai.request.model", model),
		))
}

// endChat closes a call's span with the tokens it used, or its error.
func endChat(span trace.Span, u focusgate.RetrieverUsage, err error) {
	span.SetAttributes(
		attribute.Int("gen_ai.usage.input_tokens", u.PromptTokens),
		attribute.Int("gen_ai.usage.output_tokens", u.CompletionTokens),
	)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, string(Reason(err)))
	}
	span.End()
}
