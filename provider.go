package focusgate

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Provider declares one provider's API as focusgate speaks it, in one place:
// the routes it inspects, which requests it claims among the others, where
// its upstream and keys are configured, where its clients put their
// credentials, the shape of its errors, how it refuses an over-long prompt
// and what its models cost. The router, authentication, the error writer,
// configuration, the metrics and the dashboard read these declarations, so
// that adding an API is one declaration and a line in Providers (README,
// "Adding an API").
type Provider struct {
	// Name is the provider's name in FOCUSGATE_RETRIEVER_API, in logs and
	// in the README: "openai", "anthropic", "gemini".
	Name string
	// Routes are the requests whose bodies are inspected. They are all
	// POST requests; a path matches the first route of the first provider
	// whose pattern it fits.
	Routes []Route
	// Claims says that a request on no route speaks this provider's API
	// all the same, so that it passes through to this provider's upstream
	// (Claude Code's other calls carry anthropic-version, Gemini's carry
	// x-goog-api-key). Nil claims nothing; DefaultProvider takes every
	// request nobody claims.
	Claims func(r *http.Request) bool
	// Credentials are where the provider's clients put their API key, in
	// the order they are looked at. The first is where focusgate puts the
	// configured upstream key.
	Credentials []Credential
	// ClientKeyEnv is the variable its SDKs read the user's key from, which
	// `focusgate prune` and `eval` use as the user's own credential.
	ClientKeyEnv string
	// Settings name its upstream configuration; config.Config holds the
	// values and checks that its defaults are these.
	Settings Settings
	// ErrorBody is one of focusgate's own errors in the provider's shape,
	// so that its SDKs raise it like any other API error. typ and code are
	// OpenAI's error type and code; shapes without them derive theirs from
	// the status.
	ErrorBody func(status int, message, typ, code string) []byte
	// ContextOverflow says whether an upstream answer refuses a request as
	// longer than the model's context window.
	ContextOverflow func(status int, body []byte) bool
	// Prices are the list prices of its models (see the pricing package).
	Prices map[string]Price
}

// Route is one inspected request of a provider's API.
type Route struct {
	// Pattern is the request path. A segment "{name}" matches any one
	// non-empty segment; a last segment "{model}:verb" matches a segment
	// ending in ":verb" and names the model (Gemini's model is in the path,
	// and the colon does not suit routers' ":param" syntax).
	Pattern string
	// API says how the body is read.
	API API
	// Sizing marks a request that counts tokens rather than asks for an
	// answer (count_tokens, countTokens): a body that is one tool output
	// passes as it came (see the README).
	Sizing bool
}

// Settings are the names (after the FOCUSGATE_ prefix) and defaults of a
// provider's upstream settings.
type Settings struct {
	URL, Key, RetrieverModel          string // "GEMINI_URL", "GEMINI_API_KEY", "GEMINI_RETRIEVER_MODEL"
	DefaultURL, DefaultRetrieverModel string
}

// CredentialKind says how a credential travels.
type CredentialKind uint8

const (
	// Bearer is the token of an "Authorization: Bearer" header.
	CredentialBearer CredentialKind = iota
	// Header is the whole value of a header.
	CredentialHeader
	// Query is the value of a query parameter.
	CredentialQuery
)

// Credential is one place a client puts its API key.
type Credential struct {
	Kind CredentialKind
	Name string // canonical header name, or the query parameter
}

// In returns the credential as r carries it, or "" when r carries none
// there, or carries it more than once (an ambiguous credential is never
// used).
func (c Credential) In(r *http.Request) string {
	switch c.Kind {
	case CredentialQuery:
		if r.URL == nil || r.URL.RawQuery == "" {
			return ""
		}
		if vs := r.URL.Query()[c.Name]; len(vs) == 1 {
			return strings.TrimSpace(vs[0])
		}
		return ""
	case CredentialBearer:
		scheme, token, ok := strings.Cut(single(r.Header, c.Name), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return ""
		}
		return strings.TrimSpace(token)
	}
	return single(r.Header, c.Name)
}

// Present says whether r carries anything at all in this place, valid or
// not: a client that sends a credential of its own does not get the
// gateway's.
func (c Credential) Present(r *http.Request) bool {
	if c.Kind == CredentialQuery {
		return r.URL != nil && r.URL.RawQuery != "" && r.URL.Query().Has(c.Name)
	}
	return len(r.Header.Values(c.Name)) > 0
}

// Set puts key in this place on r, replacing what was there.
func (c Credential) Set(r *http.Request, key string) {
	switch c.Kind {
	case CredentialQuery:
		q := r.URL.Query()
		q.Set(c.Name, key)
		r.URL.RawQuery = q.Encode()
	case CredentialBearer:
		r.Header.Set(c.Name, "Bearer "+key)
	default:
		r.Header.Set(c.Name, key)
	}
}

// Remove deletes this place from r.
func (c Credential) Remove(r *http.Request) {
	if c.Kind != CredentialQuery {
		r.Header.Del(c.Name)
		return
	}
	if r.URL == nil || r.URL.RawQuery == "" {
		return
	}
	// Only the parameter goes: the rest of the query keeps its bytes.
	var kept []string
	for pair := range strings.SplitSeq(r.URL.RawQuery, "&") {
		if name, _, _ := strings.Cut(pair, "="); name != c.Name {
			kept = append(kept, pair)
		}
	}
	r.URL.RawQuery = strings.Join(kept, "&")
}

func single(h http.Header, name string) string {
	if vs := h.Values(name); len(vs) == 1 {
		return strings.TrimSpace(vs[0])
	}
	return ""
}

// Credential returns the client's own credential as r carries it for this
// provider: the first of its places that holds one, or "".
func (p *Provider) Credential(r *http.Request) string {
	for _, c := range p.Credentials {
		if v := c.In(r); v != "" {
			return v
		}
	}
	return ""
}

// HasCredential says whether r carries anything in one of the provider's
// credential places.
func (p *Provider) HasCredential(r *http.Request) bool {
	for _, c := range p.Credentials {
		if c.Present(r) {
			return true
		}
	}
	return false
}

// Providers lists every provider focusgate speaks, in the order requests
// are matched against their routes and claims.
var Providers = []*Provider{&OpenAIProvider, &AnthropicProvider, &GeminiProvider}

// DefaultProvider takes the requests no provider routes or claims: an
// OpenAI-compatible upstream, where most gateways' clients go.
var DefaultProvider = &OpenAIProvider

// ProviderNamed returns the provider called name, ignoring case, or nil.
func ProviderNamed(name string) *Provider {
	for _, p := range Providers {
		if strings.EqualFold(strings.TrimSpace(name), p.Name) {
			return p
		}
	}
	return nil
}

// ProviderNames lists the providers' names, for messages and help texts.
func ProviderNames() []string {
	names := make([]string, len(Providers))
	for i, p := range Providers {
		names[i] = p.Name
	}
	return names
}

// ProviderOf returns the provider whose routes carry api.
func ProviderOf(api API) *Provider {
	for _, p := range Providers {
		for _, r := range p.Routes {
			if r.API == api {
				return p
			}
		}
	}
	return DefaultProvider
}

// Match is what the router learns of a request from the declarations.
type Match struct {
	Provider *Provider
	// Route is the inspected route the request took; nil for a request
	// that passes through.
	Route *Route
	// Model is the model the path names (Gemini), or "".
	Model string
}

// MatchRequest finds the provider of a request and, for an inspected one,
// its route: the first route whose pattern fits a POST's path, else the
// first provider that claims the request, else DefaultProvider.
func MatchRequest(r *http.Request) Match {
	if r.Method == http.MethodPost {
		for _, p := range Providers {
			for i := range p.Routes {
				if model, ok := matchPattern(p.Routes[i].Pattern, r.URL.Path); ok {
					return Match{Provider: p, Route: &p.Routes[i], Model: model}
				}
			}
		}
	}
	for _, p := range Providers {
		if p.Claims != nil && p.Claims(r) {
			return Match{Provider: p}
		}
	}
	return Match{Provider: DefaultProvider}
}

// matchPattern says whether path fits pattern (see Route.Pattern), and
// which model it names.
func matchPattern(pattern, path string) (model string, ok bool) {
	pattern, pok := strings.CutPrefix(pattern, "/")
	path, ok = strings.CutPrefix(path, "/")
	if !ok || !pok {
		return "", false
	}
	for {
		pseg, prest, pmore := strings.Cut(pattern, "/")
		seg, rest, more := strings.Cut(path, "/")
		if pmore != more {
			return "", false
		}
		switch {
		case pseg == seg && !strings.Contains(pseg, "{"):
		case strings.HasPrefix(pseg, "{") && strings.HasSuffix(pseg, "}"):
			if seg == "" {
				return "", false
			}
		case strings.HasPrefix(pseg, "{model}:"):
			name, found := strings.CutSuffix(seg, pseg[len("{model}"):])
			if !found || name == "" || strings.Contains(name, ":") {
				return "", false
			}
			model = name
		default:
			return "", false
		}
		if !more {
			return model, true
		}
		pattern, path = prest, rest
	}
}

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

// Cost is the price of a call with the given token counts.
func (p Price) Cost(inputTokens, outputTokens int) float64 {
	return (float64(inputTokens)*p.Input + float64(outputTokens)*p.Output) / 1e6
}

// refusal is the error object of an upstream's answer, with the members
// each provider names it by: OpenAI's type and code, Anthropic's type,
// Google's status (Google's code is the HTTP status, a number).
type refusal struct {
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Status  string          `json:"status"`
	Message string          `json:"message"`
}

// refusalOf reads the error object of a 400 answer; ok is false for any
// other status or a body that holds none. Only the named members are read,
// so that words of the message elsewhere in a body cannot pass for a code.
func refusalOf(status int, body []byte) (e refusal, ok bool) {
	if status != http.StatusBadRequest {
		return e, false
	}
	var answer struct {
		Error *refusal `json:"error"`
	}
	if json.Unmarshal(body, &answer) != nil || answer.Error == nil {
		return e, false
	}
	return *answer.Error, true
}
