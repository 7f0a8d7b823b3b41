package redact_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/focusgate/focusgate/internal/redact"
)

// BenchmarkHandle measures a gateway's access log line through the scrubbing
// handler, against the text handler alone.
func BenchmarkHandle(b *testing.B) {
	attrs := []slog.Attr{
		slog.String("method", "POST"), slog.String("path", "/v1/chat/completions"), slog.Int("status", 200),
		slog.Duration("duration", 3*time.Millisecond), slog.Int64("bytes_in", 189576), slog.Int("bytes_out", 331),
		slog.String("key", ""), slog.String("api", "chat"), slog.String("focusgate", "pruned; cache=hit"),
	}
	for _, bc := range []struct {
		name string
		h    slog.Handler
	}{
		{"text", slog.NewTextHandler(io.Discard, nil)},
		{"scrubbed", redact.NewHandler(slog.NewTextHandler(io.Discard, nil), redact.New(configured))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			log := slog.New(bc.h)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				log.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
			}
		})
	}
}
