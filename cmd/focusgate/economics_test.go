package main

import (
	"bytes"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/focusgate/focusgate/config"
	"github.com/focusgate/focusgate/pricing"
)

// Each retriever is weighed against the action models it judges: Claude
// Haiku against Claude's models, the Gemini retriever against Gemini's, the
// OpenAI-compatible upstream's against every priced model, since it may
// serve any of them.
func TestStartUpEconomicsPerRetriever(t *testing.T) {
	cfg, err := config.Load(func(k string) string { return map[string]string{"AWS_REGION": "eu-west-1"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	logEconomics(slog.New(slog.NewTextHandler(&out, nil)), cfg, pricing.Default())
	warned := map[string][]string{} // retriever: the models it cannot pay for
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.Contains(line, "level=WARN") {
			continue
		}
		for _, kv := range regexp.MustCompile(`(\S+)=(\S+)`).FindAllStringSubmatch(line, -1) {
			warned[kv[1]] = strings.Split(kv[2], ",")
		}
	}
	for _, tc := range []struct {
		retriever, model string
		want             bool
	}{
		{"claude-haiku-4-5", "claude-haiku-4-5", true},  // $1 in, read whole: pays only above $2
		{"claude-haiku-4-5", "gemini-2.5-flash", false}, // never judged by Claude
		{"eu.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5", true},
		{"gemini-2.5-flash-lite", "gemini-2.5-flash", false}, // $0.30 against $0.10: it pays
		{"gemini-2.5-flash-lite", "gemini-2.0-flash-lite", true},
		{"gemini-2.5-flash-lite", "claude-haiku-4-5", false},
		{"gpt-4.1-mini", "gpt-4.1-nano", true},
		{"gpt-4.1-mini", "gemini-2.5-flash", true}, // through an OpenAI-compatible upstream
	} {
		got := false
		for _, m := range warned[tc.retriever] {
			got = got || m == tc.model
		}
		if got != tc.want {
			t.Errorf("%s warned for %s: %v, want %v\n%s", tc.retriever, tc.model, got, tc.want, out.String())
		}
	}
}
