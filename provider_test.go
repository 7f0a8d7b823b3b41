package focusgate_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
)

// Every provider declares everything the gateway reads; every route's API
// has a retriever of the provider's; every default retriever has a price.
func TestEveryProviderIsDeclaredWhole(t *testing.T) {
	names := map[string]bool{}
	for _, p := range focusgate.Providers {
		if p.Name == "" || names[p.Name] {
			t.Errorf("provider %q: empty or duplicate name", p.Name)
		}
		names[p.Name] = true
		if len(p.Routes) == 0 || len(p.Credentials) == 0 || p.ErrorBody == nil || p.ContextOverflow == nil ||
			len(p.Prices) == 0 || len(p.Windows) == 0 || p.URL.Name == "" || len(p.Retrievers) == 0 {
			t.Errorf("%s: incomplete declaration %+v", p.Name, p)
		}
		if p.URL.Default == "" && p.Resolve == nil {
			t.Errorf("%s: no default URL, and nothing to say so to a request", p.Name)
		}
		for _, s := range p.Settings() {
			if s.Name == "" || s.Help == "" || strings.HasPrefix(s.Name, "FOCUSGATE_") {
				t.Errorf("%s: setting %+v needs a name (after the prefix) and a description", p.Name, s)
			}
		}
		for _, rt := range p.Routes {
			r := p.RetrieverFor(rt.API)
			if r.API != rt.API {
				t.Errorf("%s: the requests of %s have no retriever of their own", p.Name, rt.API)
			}
			if r.Model.Name == "" || r.Model.Default == "" || r.Path == "" {
				t.Errorf("%s: the retriever of %s is incomplete: %+v", p.Name, rt.API, r)
			}
			if _, priced := lookupPrice(p, r.Model.Default); !priced {
				t.Errorf("%s: its default retriever %s has no price", p.Name, r.Model.Default)
			}
		}
	}
}

// lookupPrice finds a model's price in p's table the way the pricing package
// does, family names first.
func lookupPrice(p *focusgate.Provider, model string) (focusgate.Price, bool) {
	m := focusgate.BaseModel(model)
	for {
		if price, ok := p.Prices[m]; ok {
			return price, true
		}
		i := strings.LastIndexByte(m, '-')
		if i <= 0 {
			return focusgate.Price{}, false
		}
		m = m[:i]
	}
}

// Every route matches a path that fills its variables, whatever its length.
func TestEveryRouteMatchesItsOwnPath(t *testing.T) {
	fill := regexp.MustCompile(`\{[a-z_]+\}`)
	for _, p := range focusgate.Providers {
		for _, rt := range p.Routes {
			path := fill.ReplaceAllString(rt.Pattern, "x-1")
			m := focusgate.MatchRequest(httptest.NewRequest(http.MethodPost, path, nil))
			if m.Route == nil || m.Route.Pattern != rt.Pattern || m.Provider != p {
				t.Errorf("%s %s: matched %v, want its own route", p.Name, path, m.Route)
			}
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
		{"POST", "/v1/chat/completions/", nil, "openai", "chat", "", false},
		{"POST", "/v1/messages?beta=true", nil, "anthropic", "messages", "", false},
		{"POST", "/v1/messages/count_tokens", nil, "anthropic", "messages", "", true},
		{"GET", "/v1/models", map[string]string{"Anthropic-Version": "2023-06-01"}, "anthropic", "", "", false},
		{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", nil, "gemini", "gemini", "gemini-2.5-flash", false},
		{"POST", "/v1beta/models/gemini-2.5-flash:generateContent", nil, "gemini", "gemini", "gemini-2.5-flash", false},
		{"POST", "/v1/models/gemini-2.5-pro:countTokens", nil, "gemini", "gemini", "gemini-2.5-pro", true},
		{"POST", "/v1beta/models/:generateContent", nil, "gemini", "", "", false},
		{"POST", "/v1beta/models/a:b:generateContent", nil, "gemini", "", "", false},
		{"POST", "/v1beta/models/gemini-2.5-flash:embedContent", nil, "gemini", "", "", false},
		{"POST", "/v1beta/tunedModels/x:generateContent", nil, "gemini", "", "", false},
		{"GET", "/v1beta/models", nil, "gemini", "", "", false},
		{"GET", "/v1/models?key=AIza", nil, "gemini", "", "", false},
		{"GET", "/v1/models", map[string]string{"X-Goog-Api-Key": "AIza"}, "gemini", "", "", false},
		{"POST", "/v1/models/ft:gpt-4.1:acme::x1", nil, "openai", "", "", false},
		{"GET", "/v1/models", nil, "openai", "", "", false},
		// Vertex AI: Gemini and Claude under one provider.
		{"POST", "/v1/projects/p-1/locations/global/publishers/google/models/gemini-3-pro-preview:generateContent", nil, "vertex", "gemini", "gemini-3-pro-preview", false},
		{"POST", "/v1beta1/projects/p/locations/l/publishers/google/models/gemini-2.5-flash:countTokens", nil, "vertex", "gemini", "gemini-2.5-flash", true},
		{"POST", "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict", nil, "vertex", "messages", "claude-sonnet-4-5@20250929", false},
		{"POST", "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict", nil, "vertex", "messages", "claude-sonnet-4-5@20250929", false},
		{"POST", "/v1/projects/p/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict", nil, "vertex", "messages", "", true},
		{"GET", "/v1/projects/p/locations/us-east5/endpoints", map[string]string{"Anthropic-Version": "2023-06-01"}, "vertex", "", "", false},
		// Bedrock: the model id with its colon, raw or escaped, and as an
		// inference profile's ARN with an escaped slash.
		{"POST", "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke", nil, "bedrock", "messages", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", false},
		{"POST", "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream", map[string]string{"Anthropic-Version": "2023-06-01"}, "bedrock", "messages", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", false},
		{"POST", "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.amazon.nova-pro-v1%3A0/converse", nil, "bedrock", "converse", "arn:aws:bedrock:us-east-1:1:inference-profile/us.amazon.nova-pro-v1:0", false},
		{"POST", "/model/amazon.nova-lite-v1:0/converse-stream", nil, "bedrock", "converse", "amazon.nova-lite-v1:0", false},
		{"POST", "/model/amazon.nova-lite-v1:0/count-tokens", nil, "bedrock", "", "amazon.nova-lite-v1:0", false},
		{"GET", "/inference-profiles?type=SYSTEM_DEFINED", nil, "bedrock", "", "", false},
		// Spellings a lenient server reads as a route are inspected as that
		// route (and forwarded as they came).
		{"POST", "//v1beta/models/gemini-2.5-flash:generateContent", nil, "gemini", "gemini", "gemini-2.5-flash", false},
		{"POST", "/v1beta//models/gemini-2.5-flash:generateContent", nil, "gemini", "gemini", "gemini-2.5-flash", false},
		{"POST", "/v1beta/models/gemini-2.5-flash:generateContent/", nil, "gemini", "gemini", "gemini-2.5-flash", false},
		{"POST", "/V1BETA/Models/gemini-2.5-flash:generatecontent", nil, "gemini", "gemini", "gemini-2.5-flash", false},
		{"POST", "/v1beta/models/models/gemini-2.5-flash:streamGenerateContent", nil, "gemini", "gemini", "gemini-2.5-flash", false},
		{"POST", "//v1//chat//completions/", nil, "openai", "chat", "", false},
		{"POST", "/V1/Messages", nil, "anthropic", "messages", "", false},
		// Azure OpenAI: the deployment names the model.
		{"POST", "/openai/deployments/prod-4o/chat/completions?api-version=2024-10-21", nil, "azure", "chat", "prod-4o", false},
		{"POST", "/openai/deployments/prod-4o/responses?api-version=2025-04-01-preview", nil, "azure", "responses", "prod-4o", false},
		{"POST", "/openai/responses?api-version=preview", nil, "azure", "responses", "", false},
		{"POST", "/openai/v1/chat/completions", nil, "azure", "chat", "", false},
		{"POST", "/openai/v1/responses", nil, "azure", "responses", "", false},
		{"GET", "/openai/v1/models", nil, "azure", "", "", false},
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
		if m.Provider.Name != tt.provider || api != tt.api || m.Model() != tt.model || sizing != tt.sizing {
			t.Errorf("%s %s: %s, route %q, model %q, sizing %v; want %s, %q, %q, %v",
				tt.method, tt.target, m.Provider.Name, api, m.Model(), sizing, tt.provider, tt.api, tt.model, tt.sizing)
		}
	}
}

// A request passing through to Vertex AI names its location too: its host
// depends on it.
func TestClaimedRequestsNameTheirPathsVariables(t *testing.T) {
	r := httptest.NewRequest("GET", "/v1/projects/acme/locations/europe-west4/publishers/google/models", nil)
	m := focusgate.MatchRequest(r)
	if m.Provider != &focusgate.VertexProvider || m.Vars.Get("location") != "europe-west4" || m.Vars.Get("project") != "acme" {
		t.Errorf("%s, location %q, project %q", m.Provider.Name, m.Vars.Get("location"), m.Vars.Get("project"))
	}
}

// Vertex AI's host comes from the path's location, which the client
// controls: only a region's name or global is taken.
func TestVertexHostComesFromARegionOnly(t *testing.T) {
	const def = "https://{location}-aiplatform.googleapis.com"
	for _, tt := range []struct {
		location, want string
	}{
		{"us-east5", "https://us-east5-aiplatform.googleapis.com"},
		{"global", "https://aiplatform.googleapis.com"},
		{"europe-west4", "https://europe-west4-aiplatform.googleapis.com"},
		{"evil.example.com#", ""},
		{"x@evil.example.com", ""},
		{"US-EAST5", ""},
		{"a/b", ""},
		{strings.Repeat("a", 41), ""},
	} {
		path := "/v1/projects/p/locations/" + strings.ReplaceAll(tt.location, "/", "%2F") + "/publishers/google/models/gemini-2.5-flash:generateContent"
		m := focusgate.MatchRequest(httptest.NewRequest("POST", "http://gw"+strings.ReplaceAll(path, "#", "%23"), nil))
		got, err := focusgate.VertexProvider.Resolve(def, m.Vars)
		if got != tt.want || (err == nil) != (tt.want != "") {
			t.Errorf("location %q: %q, %v; want %q", tt.location, got, err, tt.want)
		}
	}
	if got, err := focusgate.VertexProvider.Resolve("http://127.0.0.1:9", focusgate.Vars{}); got != "http://127.0.0.1:9" || err != nil {
		t.Errorf("a configured URL without variables: %q, %v", got, err)
	}
}

func TestFillPathVariables(t *testing.T) {
	m := focusgate.MatchRequest(httptest.NewRequest("POST", "/v1/projects/my%20proj/locations/us-east5/publishers/anthropic/models/x:rawPredict", nil))
	model := func(name string) string {
		if name == "model" {
			return "claude-haiku-4-5@20251001"
		}
		return ""
	}
	got, ok := m.Vars.Fill("/v1/projects/{project}/locations/{location}/publishers/anthropic/models/{model}:rawPredict", model)
	if want := "/v1/projects/my%20proj/locations/us-east5/publishers/anthropic/models/claude-haiku-4-5@20251001:rawPredict"; !ok || got != want {
		t.Errorf("%q, %v; want %q", got, ok, want)
	}
	if _, ok := (focusgate.Vars{}).Fill("/v1/projects/{project}", nil); ok {
		t.Error("a variable the request does not name was filled")
	}
}

// The clouds' model ids find their family, for prices and windows.
func TestBaseModelReducesCloudModelIDs(t *testing.T) {
	for in, want := range map[string]string{
		"us.anthropic.claude-sonnet-4-5-20250929-v1:0":                          "claude-sonnet-4-5-20250929",
		"anthropic.claude-3-haiku-20240307-v1:0:200k":                           "claude-3-haiku-20240307",
		"global.anthropic.claude-haiku-4-5-20251001-v1:0":                       "claude-haiku-4-5-20251001",
		"arn:aws:bedrock:us-east-1:1:inference-profile/us.amazon.nova-pro-v1:0": "nova-pro",
		"claude-sonnet-4-5@20250929":                                            "claude-sonnet-4-5",
		"openai/gpt-4.1":                                                        "gpt-4.1",
		"models/gemini-2.5-flash":                                               "gemini-2.5-flash",
		"gpt-4o-mini":                                                           "gpt-4o-mini",
		"GPT-4.1":                                                               "gpt-4.1",
	} {
		if got := focusgate.BaseModel(in); got != want {
			t.Errorf("BaseModel(%q) = %q, want %q", in, got, want)
		}
	}
	for _, m := range []string{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5@20250929"} {
		if focusgate.FamilyOf(m) != focusgate.FamilyClaude {
			t.Errorf("%s is not of Claude's family", m)
		}
	}
}

func TestCredentials(t *testing.T) {
	gemini := &focusgate.GeminiProvider
	r := httptest.NewRequest("POST", "/v1beta/models/m:generateContent?alt=sse&key=AIza-q&x=%2F", nil)
	if got := gemini.Credential(r); got.Value != "AIza-q" || got.Place.Kind != focusgate.CredentialQuery {
		t.Errorf("credential %+v, want the query's", got)
	}
	r.Header.Set("X-Goog-Api-Key", "AIza-h")
	if got := gemini.Credential(r); got.Value != "AIza-h" {
		t.Errorf("credential %+v, want the header's, which comes first", got)
	}
	focusgate.Credential{Kind: focusgate.CredentialQuery, Name: "key"}.Remove(r)
	if r.URL.RawQuery != "alt=sse&x=%2F" {
		t.Errorf("query %q after removing the key: the rest must keep its bytes", r.URL.RawQuery)
	}
	focusgate.Credential{Kind: focusgate.CredentialQuery, Name: "key"}.Set(r, "AIza/gw")
	if r.URL.RawQuery != "alt=sse&x=%2F&key=AIza%2Fgw" {
		t.Errorf("query %q after setting the key: the rest must keep its bytes", r.URL.RawQuery)
	}
	r.Header.Del("X-Goog-Api-Key")
	focusgate.Credential{Kind: focusgate.CredentialQuery, Name: "key"}.Remove(r)
	if gemini.HasCredential(r) {
		t.Error("a request without a credential has one")
	}
	r.Header.Add("Authorization", "Bearer a")
	r.Header.Add("Authorization", "Bearer b")
	if got := gemini.Credential(r); got.Value != "" || !gemini.HasCredential(r) {
		t.Errorf("two Authorization headers: credential %+v; want none used, but one present", got)
	}
	out := httptest.NewRequest("POST", "/x", nil)
	focusgate.AnthropicProvider.Credentials[0].Set(out, "sk-ant")
	focusgate.OpenAIProvider.Credentials[0].Set(out, "sk-oai")
	focusgate.AzureProvider.Credentials[0].Set(out, "az-key")
	if out.Header.Get("X-Api-Key") != "sk-ant" || out.Header.Get("Authorization") != "Bearer sk-oai" || out.Header.Get("Api-Key") != "az-key" {
		t.Errorf("headers %v", out.Header)
	}
}

func TestErrorShapes(t *testing.T) {
	for _, tt := range []struct {
		p          *focusgate.Provider
		want, kind string
	}{
		{&focusgate.OpenAIProvider, `{"error":{"message":"m","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, ""},
		{&focusgate.AzureProvider, `{"error":{"message":"m","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, ""},
		{&focusgate.AnthropicProvider, `{"type":"error","error":{"type":"authentication_error","message":"m"}}`, ""},
		{&focusgate.GeminiProvider, `{"error":{"code":401,"message":"m","status":"UNAUTHENTICATED"}}`, ""},
		{&focusgate.VertexProvider, `{"error":{"code":401,"message":"m","status":"UNAUTHENTICATED"}}`, ""},
		{&focusgate.BedrockProvider, `{"message":"m"}`, "AccessDeniedException"},
	} {
		if got := string(tt.p.ErrorBody(http.StatusUnauthorized, "m", "invalid_request_error", "invalid_api_key")); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.p.Name, got, tt.want)
		}
		h := http.Header{}
		if tt.p.ErrorHeader != nil {
			tt.p.ErrorHeader(h, http.StatusUnauthorized)
		}
		if got := h.Get("X-Amzn-Errortype"); got != tt.kind {
			t.Errorf("%s: x-amzn-errortype %q, want %q", tt.p.Name, got, tt.kind)
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

// Each provider recognises its own refusals of a prompt over the context
// window, and nothing else.
func TestContextOverflow(t *testing.T) {
	refusals := map[string]string{
		"openai":          `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		"anthropic":       `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215311 tokens > 200000 maximum"}}`,
		"gemini":          `{"error":{"code":400,"message":"The input token count (1205312) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`,
		"bedrock":         `{"message":"Input is too long for requested model."}`,
		"bedrock-invoke":  `{"message":"prompt is too long: 215311 tokens > 200000 maximum"}`,
		"bedrock-convers": `{"message":"The model returned the following errors: Input is too long for requested model."}`,
	}
	takes := map[string][]string{
		"openai": {"openai"}, "azure": {"openai"}, "anthropic": {"anthropic"}, "gemini": {"gemini"},
		"vertex": {"gemini", "anthropic"}, "vertex-express": {"gemini"}, "bedrock": {"bedrock", "bedrock-invoke", "bedrock-convers"},
	}
	for _, p := range focusgate.Providers {
		for name, body := range refusals {
			want := false
			for _, n := range takes[p.Name] {
				want = want || n == name
			}
			if got := p.ContextOverflow(http.StatusBadRequest, []byte(body)); got != want {
				t.Errorf("%s on %s's refusal: %v", p.Name, name, got)
			}
			if p.ContextOverflow(http.StatusTooManyRequests, []byte(body)) {
				t.Errorf("%s: a 429 is not a context overflow", p.Name)
			}
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
