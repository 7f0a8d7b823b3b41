package redact_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/focusgate/focusgate/internal/redact"
)

const configured = "fg-alice-0123456789abcdef"

func TestString(t *testing.T) {
	r := redact.New(configured, "short")
	tests := []struct{ in, want string }{
		{"Incorrect API key provided: sk-proj-abcDEF0123456789_-xyz.", "Incorrect API key provided: [REDACTED]."},
		{"Incorrect API key provided: sk-abc12***************wxyz. You can find", "Incorrect API key provided: [REDACTED]. You can find"},
		{"masked sk-proj-ab…wxyz end", "masked [REDACTED] end"},
		{`{"key":"sk-ant-api03-AAAA"}`, `{"key":"[REDACTED]"}`},
		{"API key not valid: AIzaSyA1b2C3d4E5f6G7h8I9j0K_lmnopqrstu-v. Please pass a valid API key.", "API key not valid: [REDACTED]. Please pass a valid API key."},
		{"token ya29.a0AfH6SMBx-abc_DEF.123 expired", "token [REDACTED] expired"},
		{"Authorization: Bearer " + configured, "Authorization: Bearer [REDACTED]"},
		{"authorization: bearer abc.def.ghi, next", "authorization: bearer [REDACTED], next"},
		{"the key " + configured + " is unknown", "the key [REDACTED] is unknown"},
		{"path=/v1/files/" + configured, "path=/v1/files/[REDACTED]"},
		// Ordinary text is left alone, and secrets too short to be keys are
		// not scrubbed from it.
		{"a short answer; task-list; risk-free", "a short answer; task-list; risk-free"},
		{"status=401 reason=retriever-http-4xx", "status=401 reason=retriever-http-4xx"},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
	r.SetSecrets("fg-bob-0123456789abcdef0")
	if got := r.String("old " + configured); got != "old "+configured {
		t.Errorf("after SetSecrets, a removed secret is still scrubbed: %q", got)
	}
	var zero *redact.Redactor
	if got := zero.String("sk-abcdef123"); got != "[REDACTED]" {
		t.Errorf("a nil Redactor: %q", got)
	}
}

func TestHandlerScrubsEveryAttribute(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(redact.NewHandler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), redact.New(configured)))
	log = log.With("client", configured).WithGroup("g")
	log.Debug("rejected "+configured,
		"err", errors.New("retriever returned HTTP 401: Incorrect API key provided: sk-proj-abc***xyz"),
		"nested", slog.GroupValue(slog.String("auth", "Bearer "+configured)),
		"any", map[string]string{"key": configured},
		"count", 3)
	out := buf.String()
	if strings.Contains(out, configured) || strings.Contains(out, "sk-proj") {
		t.Errorf("a key reached the log: %s", out)
	}
	for _, want := range []string{`"count":3`, "retriever returned HTTP 401", "[REDACTED]"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log line lost %s: %s", want, out)
		}
	}
}

// A line with nothing to scrub comes out as the handler it wraps writes it,
// and a key in any string, nested or not, is scrubbed whatever else the line
// holds.
func TestHandlerPassesCleanLinesAsTheyCame(t *testing.T) {
	for _, tt := range []struct {
		name  string
		attrs []slog.Attr
		clean bool
	}{
		{"strings and numbers", []slog.Attr{slog.String("path", "/v1/chat/completions"), slog.Int("status", 200), slog.Float64("reduction", 0.5)}, true},
		{"a group", []slog.Attr{slog.Group("page", slog.String("format", "axtree"), slog.Bool("pruned", true))}, true},
		{"a key in a string", []slog.Attr{slog.Int("status", 401), slog.String("err", "Incorrect API key provided: "+configured)}, false},
		{"a key in a group", []slog.Attr{slog.Group("upstream", slog.String("auth", "Bearer "+configured))}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var bare, scrubbed bytes.Buffer
			at := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
			for _, h := range []slog.Handler{
				slog.NewTextHandler(&bare, nil),
				redact.NewHandler(slog.NewTextHandler(&scrubbed, nil), redact.New(configured)),
			} {
				rec := slog.NewRecord(at, slog.LevelInfo, "request", 0)
				rec.AddAttrs(tt.attrs...)
				if err := h.Handle(context.Background(), rec); err != nil {
					t.Fatal(err)
				}
			}
			if got := scrubbed.String(); tt.clean && got != bare.String() {
				t.Errorf("a clean line changed:\n got %s\nwant %s", got, bare.String())
			} else if !tt.clean && (strings.Contains(got, configured) || !strings.Contains(got, redact.Mask)) {
				t.Errorf("the key was not scrubbed: %s", got)
			}
		})
	}
}
