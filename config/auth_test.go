package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/config"
)

// An upstream key with no client keys on an address other hosts can reach
// is refused, unless the intent to run open is stated; without an upstream
// key nothing changes.
func TestOpenRelayIsRefused(t *testing.T) {
	tests := []struct {
		addr, upstreamKey, keysFile string
		allow                       bool
		refused                     bool
	}{
		{":8080", "sk-company", "", false, true},
		{"0.0.0.0:8080", "sk-company", "", false, true},
		{"[::]:8080", "sk-company", "", false, true},
		{"10.0.0.5:8080", "sk-company", "", false, true},
		{"gateway.internal:8080", "sk-company", "", false, true},
		{":8080", "sk-company", "/etc/focusgate/keys", false, false},
		{":8080", "sk-company", "", true, false},
		{"127.0.0.1:8080", "sk-company", "", false, false},
		{"127.0.0.2:8080", "sk-company", "", false, false},
		{"[::1]:8080", "sk-company", "", false, false},
		{"localhost:8080", "sk-company", "", false, false},
		{":8080", "", "", false, false}, // each client brings its own key
	}
	for _, tt := range tests {
		cfg, err := config.Load(getenv(nil))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Addr, cfg.ClientKeysFile, cfg.AllowUnauth = tt.addr, tt.keysFile, tt.allow
		cfg.Set(focusgate.OpenAIProvider.Key, tt.upstreamKey)
		err = cfg.Validate()
		if got := errors.Is(err, config.ErrOpenRelay); got != tt.refused {
			t.Errorf("%+v: refused %v (%v), want %v", tt, got, err, tt.refused)
			continue
		}
		if !tt.refused {
			continue
		}
		for _, want := range []string{"FOCUSGATE_UPSTREAM_API_KEY", "FOCUSGATE_CLIENT_KEYS_FILE", "FOCUSGATE_ADDR", "FOCUSGATE_ALLOW_UNAUTHENTICATED=true"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the refusal does not name %s: %v", tt.addr, want, err)
			}
		}
		if strings.Contains(err.Error(), tt.upstreamKey) {
			t.Errorf("the refusal prints the upstream key: %v", err)
		}
	}
}

// A URL's credentials never reach an error message, whatever the scheme and
// whether they are a user name or a password.
func TestURLCredentialsAreNeverPrinted(t *testing.T) {
	const secret = "sk-proj-0123456789abcdef"
	urls := []string{
		"ftp://user:" + secret + "@h/v1",
		"ftp://" + secret + "@h/v1",
		"http://user:" + secret + "@h:bad/v1",
		"mailto://user:" + secret + "@h",
		"relative/user:" + secret + "@h",
		"http://" + secret + ":x@%zz/v1",
		"http://user:" + secret + "@/v1",
	}
	for _, u := range urls {
		cfg, _ := config.Load(getenv(nil))
		cfg.RetrieverURL, cfg.RedisURL = u, u
		cfg.Set(focusgate.OpenAIProvider.URL, u)
		err := cfg.Validate()
		if err == nil {
			t.Errorf("%q accepted", config.RedactURL(u))
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error prints the URL's credentials: %v", err)
		}
	}
	for raw, want := range map[string]string{
		"https://user:" + secret + "@api.example.com/v1":        "https://xxxxx@api.example.com/v1",
		"https://bedrock-runtime.{region}.amazonaws.com":        "https://bedrock-runtime.{region}.amazonaws.com",
		"https://{location}-aiplatform.googleapis.com":          "https://{location}-aiplatform.googleapis.com",
		"https://" + secret + "@bedrock-runtime.{region}.x.com": "(unparsable URL)",
		"http://" + secret + ":x@%zz/v1":                        "(unparsable URL)",
	} {
		if got := config.RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// Every provider's upstream key alone makes an open relay on a public
// address, and the refusal names it.
func TestOpenRelayOfEveryProvider(t *testing.T) {
	for _, p := range focusgate.Providers {
		if p.Key.Name == "" {
			continue
		}
		cfg, err := config.Load(getenv(map[string]string{config.Prefix + p.Key.Name: "key-" + p.Name, "FOCUSGATE_AZURE_URL": "https://a.openai.azure.com"}))
		if err != nil {
			t.Fatal(err)
		}
		err = cfg.Validate()
		if !errors.Is(err, config.ErrOpenRelay) || !strings.Contains(err.Error(), config.Prefix+p.Key.Name) {
			t.Errorf("%s: %v, want an open relay refusal naming %s%s", p.Name, err, config.Prefix, p.Key.Name)
		}
	}
}
