package cloudauth

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/focusgate/focusgate"
)

func TestFor(t *testing.T) {
	opts := Options{Getenv: env{}.getenv, Logger: slog.New(slog.DiscardHandler)}
	cases := []struct {
		p    *focusgate.Provider
		key  string
		want string
	}{
		{&focusgate.BedrockProvider, "", "sigv4"},
		{&focusgate.BedrockProvider, "brk", "key"},
		{&focusgate.VertexProvider, "", "google"},
		{&focusgate.AzureProvider, "az", "key"},
		{&focusgate.AzureProvider, "", "none"},
		{&focusgate.OpenAIProvider, "", "none"},
		{&focusgate.AnthropicProvider, "sk-ant", "key"},
	}
	for _, c := range cases {
		got := "none"
		switch s := For(c.p, c.key, opts).(type) {
		case nil:
		case *KeySigner:
			got = "key"
			if s.place != c.p.Credentials[0] {
				t.Errorf("%s: key in %v, want %v", c.p.Name, s.place, c.p.Credentials[0])
			}
		case *SigV4:
			got = "sigv4"
			if s.service != "bedrock" {
				t.Errorf("%s: service %q", c.p.Name, s.service)
			}
		case *Google:
			got = "google"
			if s.scope != focusgate.VertexProvider.CloudScope {
				t.Errorf("%s: scope %q", c.p.Name, s.scope)
			}
		default:
			t.Errorf("%s: a %T", c.p.Name, s)
		}
		if got != c.want {
			t.Errorf("For(%s, key %q) is %s, want %s", c.p.Name, c.key, got, c.want)
		}
	}
}

func TestForBedrockKey(t *testing.T) {
	s := For(&focusgate.BedrockProvider, "bedrock-api-key", Options{Logger: slog.New(slog.DiscardHandler)})
	r := httptest.NewRequest(http.MethodPost, "http://upstream/model/m/converse", nil)
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=CLIENT/...")
	r.Header.Set("X-Amz-Security-Token", "client-session")
	r.Header.Set("X-Amz-Date", "20200101T000000Z")
	if err := s.Sign(context.Background(), r, nil); err != nil {
		t.Fatal(err)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer bedrock-api-key" {
		t.Errorf("authorization %q", got)
	}
	if r.Header.Get("X-Amz-Security-Token") != "" || r.Header.Get("X-Amz-Date") != "" {
		t.Error("the client's signing headers travel beside the gateway's key")
	}
}

func TestForAzureKey(t *testing.T) {
	s := For(&focusgate.AzureProvider, "azure-key", Options{Logger: slog.New(slog.DiscardHandler)})
	r := httptest.NewRequest(http.MethodPost, "http://upstream/openai/v1/chat/completions", nil)
	r.Header.Set("Authorization", "Bearer entra-token")
	if err := s.Sign(context.Background(), r, nil); err != nil {
		t.Fatal(err)
	}
	if r.Header.Get("Api-Key") != "azure-key" || r.Header.Get("Authorization") != "" {
		t.Errorf("api-key %q, authorization %q", r.Header.Get("Api-Key"), r.Header.Get("Authorization"))
	}
}
