package focusgate_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/focusgate/focusgate"
)

// Every provider declares everything the gateway reads, and every API is
// carried by exactly one provider's routes.
func TestEveryProviderIsDeclaredWhole(t *testing.T) {
	names := map[string]bool{}
	for _, p := range focusgate.Providers {
		if p.Name == "" || names[p.Name] {
			t.Errorf("provider %q: empty or duplicate name", p.Name)
		}
		names[p.Name] = true
		s := p.Settings
		if len(p.Routes) == 0 || len(p.Credentials) == 0 || p.ErrorBody == nil || p.ContextOverflow == nil || len(p.Prices) == 0 ||
			s.URL == "" || s.Key == "" || s.RetrieverModel == "" || s.DefaultURL == "" || s.DefaultRetrieverModel == "" || p.ClientKeyEnv == "" {
			t.Errorf("%s: incomplete declaration %+v", p.Name, p)
		}
		if _, ok := p.Prices[s.DefaultRetrieverModel]; !ok {
			t.Errorf("%s: its default retriever %s has no price", p.Name, s.DefaultRetrieverModel)
		}
	}
	for _, api := range focusgate.APIs {
		carriers := 0
		for _, p := range focusgate.Providers {
			for _, r := range p.Routes {
				if r.API == api {
					carriers++
					if focusgate.ProviderOf(api) != p {
						t.Errorf("ProviderOf(%v) is not %s, whose routes carry it", api, p.Name)
					}
					break
				}
			}
		}
		if carriers != 1 {
			t.Errorf("%v is carried by %d providers, want 1", api, carriers)
		}
	}
}

func TestMatchRequest(t *testing.T) {
	for _, tt := range []struct {
		method, target string
		header         map[string]string
		provider       string
		api            string // "" for a request that passes through
		model          string
		sizing         bool
	}{
		{"POST", "/v1/chat/completions", nil, "openai", "chat", "", false},
		{"POST", "/chat/completions", nil, "openai", "chat", "", false},
		{"POST", "/v1/responses", nil, "openai", "responses", "", false},
		{"GET", "/v1/chat/completions", nil, "openai", "", "", false},
		{"POST", "/v1/chat/completions/", nil, "openai", "", "", false},
		{"POST", "/v1/messages?beta=true", nil, "anthropic", "messages", "", false},
		{"POST", "/v1/messages/count_tokens", nil, "anthropic", "messages", "", true},
		{"GET", "/v1/models", map[string]string{"Anthropic-Version": "2023-06-01"}, "anthropic", "", "", false},
		{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", nil, "gemini", "gemini", "gemini-2.5-flash", false},
		{"POST", "/v1beta/models/gemini-2.5-flash:generateContent", nil, "gemini", "gemini", "gemini-2.5-flash", false},
		{"POST", "/v1/models/gemini-2.5-pro:countTokens", nil, "gemini", "gemini", "gemini-2.5-pro", true},
		{"POST", "/v1/projects/p-1/locations/global/publishers/google/models/gemini-3-pro-preview:generateContent", nil, "gemini", "gemini", "gemini-3-pro-preview", false},
		{"POST", "/v1beta1/projects/p/locations/l/publishers/google/models/gemini-2.5-flash:countTokens", nil, "gemini", "gemini", "gemini-2.5-flash", true},
		{"POST", "/v1beta/models/:generateContent", nil, "gemini", "", "", false},
		{"POST", "/v1beta/models/a:b:generateContent", nil, "gemini", "", "", false},
		{"POST", "/v1beta/models/gemini-2.5-flash:embedContent", nil, "gemini", "", "", false},
		{"POST", "/v1beta/tunedModels/x:generateContent", nil, "gemini", "", "", false},
		{"GET", "/v1beta/models", nil, "gemini", "", "", false},
		{"GET", "/v1/models?key=AIza", nil, "gemini", "", "", false},
		{"GET", "/v1/models", map[string]string{"X-Goog-Api-Key": "AIza"}, "gemini", "", "", false},
		{"POST", "/v1/models/ft:gpt-4.1:acme::x1", nil, "openai", "", "", false},
		{"GET", "/v1/models", nil, "openai", "", "", false},
	} {
		r := httptest.NewRequest(tt.method, tt.target, nil)
		for k, v := range tt.header {
			r.Header.Set(k, v)
		}
		m := focusgate.MatchRequest(r)
		api, sizing := "", false
		if m.Route != nil {
			api, sizing = m.Route.API.String(), m.Route.Sizing
		}
		if m.Provider.Name != tt.provider || api != tt.api || m.Model != tt.model || sizing != tt.sizing {
			t.Errorf("%s %s: %s, route %q, model %q, sizing %v; want %s, %q, %q, %v",
				tt.method, tt.target, m.Provider.Name, api, m.Model, sizing, tt.provider, tt.api, tt.model, tt.sizing)
		}
	}
}

func TestCredentials(t *testing.T) {
	gemini := &focusgate.GeminiProvider
	r := httptest.NewRequest("POST", "/v1beta/models/m:generateContent?alt=sse&key=AIza-q&x=%2F", nil)
	if got := gemini.Credential(r); got != "AIza-q" {
		t.Errorf("credential %q, want the query's", got)
	}
	r.Header.Set("X-Goog-Api-Key", "AIza-h")
	if got := gemini.Credential(r); got != "AIza-h" {
		t.Errorf("credential %q, want the header's, which comes first", got)
	}
	focusgate.Credential{Kind: focusgate.CredentialQuery, Name: "key"}.Remove(r)
	if r.URL.RawQuery != "alt=sse&x=%2F" {
		t.Errorf("query %q after removing the key: the rest must keep its bytes", r.URL.RawQuery)
	}
	r.Header.Del("X-Goog-Api-Key")
	if gemini.HasCredential(r) {
		t.Error("a request without a credential has one")
	}
	r.Header.Add("Authorization", "Bearer a")
	r.Header.Add("Authorization", "Bearer b")
	if got := gemini.Credential(r); got != "" || !gemini.HasCredential(r) {
		t.Errorf("two Authorization headers: credential %q; want none used, but one present", got)
	}
	out := httptest.NewRequest("POST", "/x", nil)
	focusgate.AnthropicProvider.Credentials[0].Set(out, "sk-ant")
	focusgate.OpenAIProvider.Credentials[0].Set(out, "sk-oai")
	if out.Header.Get("X-Api-Key") != "sk-ant" || out.Header.Get("Authorization") != "Bearer sk-oai" {
		t.Errorf("headers %v", out.Header)
	}
}

func TestErrorShapes(t *testing.T) {
	for _, tt := range []struct {
		p    *focusgate.Provider
		want string
	}{
		{&focusgate.OpenAIProvider, `{"error":{"message":"m","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`},
		{&focusgate.AnthropicProvider, `{"type":"error","error":{"type":"authentication_error","message":"m"}}`},
		{&focusgate.GeminiProvider, `{"error":{"code":401,"message":"m","status":"UNAUTHENTICATED"}}`},
	} {
		if got := string(tt.p.ErrorBody(http.StatusUnauthorized, "m", "invalid_request_error", "invalid_api_key")); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.p.Name, got, tt.want)
		}
	}
	for status, want := range map[int]string{400: "INVALID_ARGUMENT", 408: "DEADLINE_EXCEEDED", 413: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED",
		500: "INTERNAL", 502: "UNAVAILABLE", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"} {
		var e struct{ Error struct{ Status string } }
		json.Unmarshal(focusgate.GeminiProvider.ErrorBody(status, "m", "", ""), &e)
		if e.Error.Status != want {
			t.Errorf("Gemini %d: %s, want %s", status, e.Error.Status, want)
		}
	}
}

// Each provider recognises its own refusal of a prompt over the context
// window, and nothing else.
func TestContextOverflow(t *testing.T) {
	refusals := map[string]string{
		"openai":    `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		"anthropic": `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215311 tokens > 200000 maximum"}}`,
		"gemini":    `{"error":{"code":400,"message":"The input token count (1205312) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`,
	}
	for _, p := range focusgate.Providers {
		for name, body := range refusals {
			if got := p.ContextOverflow(http.StatusBadRequest, []byte(body)); got != (name == p.Name) {
				t.Errorf("%s on %s's refusal: %v", p.Name, name, got)
			}
		}
		if p.ContextOverflow(http.StatusTooManyRequests, []byte(refusals[p.Name])) {
			t.Errorf("%s: a 429 is not a context overflow", p.Name)
		}
		if p.ContextOverflow(http.StatusBadRequest, []byte(`{"error":{"message":"invalid value for temperature","code":400,"status":"INVALID_ARGUMENT"}}`)) {
			t.Errorf("%s: another 400 taken for a context overflow", p.Name)
		}
	}
}

func TestGeminiFamily(t *testing.T) {
	for _, m := range []string{"gemini-2.5-flash", "models/gemini-3-pro-preview", "google/gemini-2.5-pro"} {
		if focusgate.FamilyOf(m) != focusgate.FamilyGemini {
			t.Errorf("%s is not of the Gemini family", m)
		}
	}
}
