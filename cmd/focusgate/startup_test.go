package main

import (
	"bytes"
	"log/slog"
	"net"
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

// The start-up log tells a new user where to point an agent: the address
// the gateway listens on, as an agent on the same machine reaches it when
// it listens on every address or on loopback.
func TestStartUpSaysWhereToPointAgents(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ui   bool
		want string
	}{
		{"[::]:8080", true, "OPENAI_BASE_URL=http://localhost:8080/v1 ANTHROPIC_BASE_URL=http://localhost:8080 GOOGLE_GEMINI_BASE_URL=http://localhost:8080 dashboard=http://localhost:8080/ui"},
		{"127.0.0.1:9000", false, "OPENAI_BASE_URL=http://localhost:9000/v1 ANTHROPIC_BASE_URL=http://localhost:9000 GOOGLE_GEMINI_BASE_URL=http://localhost:9000"},
		{"10.0.0.5:8080", false, "OPENAI_BASE_URL=http://10.0.0.5:8080/v1 ANTHROPIC_BASE_URL=http://10.0.0.5:8080 GOOGLE_GEMINI_BASE_URL=http://10.0.0.5:8080"},
		{"[2001:db8::1]:80", false, "OPENAI_BASE_URL=http://[2001:db8::1]:80/v1 ANTHROPIC_BASE_URL=http://[2001:db8::1]:80 GOOGLE_GEMINI_BASE_URL=http://[2001:db8::1]:80"},
	} {
		addr, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey {
				return slog.Attr{}
			}
			return a
		}})).Info("", agentSettings(addr, tc.ui)...)
		if got := strings.TrimSpace(out.String()); got != tc.want {
			t.Errorf("%s: %s\nwant %s", tc.addr, got, tc.want)
		}
	}
}
