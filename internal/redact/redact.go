// Package redact scrubs API keys from text that is about to be logged. An
// upstream or retriever that rejects a key often quotes it back ("Incorrect
// API key provided: sk-…"), in full or masked, and such error text reaches
// the log; so does anything a client put where a key does not belong.
//
// It is the one place that knows what a key looks like: OpenAI-style tokens
// ("sk-…", "sk-proj-…", masked "sk-abc***xyz"), Google API keys ("AIza…")
// and OAuth access tokens ("ya29.…"), bearer credentials, and the keys
// focusgate itself is configured with.
package redact

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
)

// Mask replaces every key found.
const Mask = "[REDACTED]"

var (
	// keyLike matches OpenAI-style secret keys, masked or not: sk-, then
	// key characters and the "*" or "…" of a masked key.
	keyLike = regexp.MustCompile(`\bsk-[A-Za-z0-9_\-*…]{3,}`)
	// googleKey matches Google API keys (Gemini's) and Google OAuth access
	// tokens (Vertex AI's).
	googleKey = regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{8,}|\bya29\.[0-9A-Za-z_\-.]{8,}`)
	// bearer matches a credential after the Bearer scheme.
	bearer = regexp.MustCompile(`(?i)\b(bearer)\s+[^\s"',;]+`)
)

// minSecret is the shortest configured secret scrubbed verbatim; shorter
// strings would mangle unrelated text.
const minSecret = 8

// Redactor scrubs key-like tokens and a set of known secrets from text. The
// secrets can be replaced at any time (a reloaded keys file); it is safe for
// concurrent use. The zero value scrubs key-like tokens only.
type Redactor struct {
	secrets atomic.Pointer[strings.Replacer]
}

// New returns a Redactor that also scrubs the given secrets.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	r.SetSecrets(secrets...)
	return r
}

// SetSecrets replaces the known secrets.
func (r *Redactor) SetSecrets(secrets ...string) {
	var pairs []string
	// Longest first, so that a secret containing another is replaced whole.
	sorted := slices.Clone(secrets)
	slices.SortFunc(sorted, func(a, b string) int { return len(b) - len(a) })
	for _, s := range slices.Compact(sorted) {
		if len(s) >= minSecret {
			pairs = append(pairs, s, Mask)
		}
	}
	if len(pairs) == 0 {
		r.secrets.Store(nil)
		return
	}
	r.secrets.Store(strings.NewReplacer(pairs...))
}

// String returns s without keys.
func (r *Redactor) String(s string) string {
	if r != nil {
		if rep := r.secrets.Load(); rep != nil {
			s = rep.Replace(s)
		}
	}
	if strings.Contains(s, "sk-") {
		s = keyLike.ReplaceAllLiteralString(s, Mask)
	}
	if strings.Contains(s, "AIza") || strings.Contains(s, "ya29.") {
		s = googleKey.ReplaceAllLiteralString(s, Mask)
	}
	if strings.Contains(s, "earer") || strings.Contains(s, "EARER") {
		s = bearer.ReplaceAllString(s, "${1} "+Mask)
	}
	return s
}

// Handler is a slog.Handler that scrubs the message and every attribute
// before passing the record on: strings, errors and other values as their
// text. Wrapping the root logger covers every log line, including those of
// net/http and go-redis routed through it.
type Handler struct {
	next slog.Handler
	r    *Redactor
}

// NewHandler wraps next.
func NewHandler(next slog.Handler, r *Redactor) *Handler {
	return &Handler{next: next, r: r}
}

func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h *Handler) Handle(ctx context.Context, rec slog.Record) error {
	if h.clean(rec) {
		return h.next.Handle(ctx, rec)
	}
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// clean says whether rec holds nothing to scrub, so that it can go on as
// it came: nearly every line holds no key, and rebuilding a record of more
// than a few attributes costs as much as formatting it. Values that are
// not plain strings, numbers or groups of them take the long way.
func (h *Handler) clean(rec slog.Record) bool {
	if h.r.String(rec.Message) != rec.Message {
		return false
	}
	ok := true
	rec.Attrs(func(a slog.Attr) bool {
		ok = h.cleanValue(a.Value)
		return ok
	})
	return ok
}

func (h *Handler) cleanValue(v slog.Value) bool {
	switch v.Kind() {
	case slog.KindString:
		s := v.String()
		return h.r.String(s) == s
	case slog.KindGroup:
		for _, a := range v.Group() {
			if !h.cleanValue(a.Value) {
				return false
			}
		}
		return true
	case slog.KindAny, slog.KindLogValuer:
		return false
	}
	return true
}

func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	scrubbed := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		scrubbed[i] = h.attr(a)
	}
	return &Handler{next: h.next.WithAttrs(scrubbed), r: h.r}
}

func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), r: h.r}
}

func (h *Handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.String(v.String()))
	case slog.KindGroup:
		group := v.Group()
		scrubbed := make([]any, len(group))
		for i, g := range group {
			scrubbed[i] = h.attr(g)
		}
		return slog.Group(a.Key, scrubbed...)
	case slog.KindAny:
		// Errors and other values are logged as their text; scrub that
		// text, and keep the value itself when there was nothing to scrub
		// (a handler may render it better than its text).
		text := fmt.Sprint(v.Any())
		if clean := h.r.String(text); clean != text {
			return slog.String(a.Key, clean)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
