package focusgate

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// Provider declares one provider in one place: where its requests go and
// how they are authenticated. Its routes name the API each speaks (an API
// is a body shape, api.go); its upstream, credentials, error shape, refusal
// of an over-long prompt, retriever for each API it serves, prices, context
// windows and settings are its own. The router, authentication, signing,
// the error writer, configuration, the metrics and the dashboard read these
// declarations, so that adding a provider is one declaration and a line in
// Providers (README, "Adding a provider").
type Provider struct {
	// Name is the provider's name in logs, metrics, the dashboard and
	// FOCUSGATE_RETRIEVER_API: "openai", "anthropic", "gemini", ...
	Name string
	// Routes are the requests whose bodies are inspected. They are all
	// POST requests; a path matches the first route of the first provider
	// whose pattern it fits.
	Routes []Route
	// Claims says that a request on no route goes to this provider all the
	// same (Claude Code's other calls carry anthropic-version, Gemini's
	// carry x-goog-api-key). Nil claims nothing; DefaultProvider takes
	// every request nobody claims.
	Claims func(r *http.Request) bool
	// Credentials are where the provider's clients put their own
	// credential, in the order they are looked at. The first is where the
	// gateway's key (Key) goes, and where the client's own credential is
	// put on a retriever call when the gateway has none.
	Credentials []Credential
	// URL is where its requests go: request paths are joined onto it. Its
	// default may hold "{name}" variables, which Resolve fills in.
	URL Setting
	// Resolve fills in the variables of the configured URL for one request
	// from its route (Vertex AI's host names the route's location), and
	// refuses values that could send a request elsewhere. Nil: the URL
	// holds no variables.
	Resolve func(configured string, vars Vars) (string, error)
	// Key is the setting of a static key the gateway sends in the client's
	// place (in Credentials[0]); zero when the provider takes none.
	Key Setting
	// Cloud is the credential the gateway finds in its environment for
	// this provider when Key is not set: none, AWS SigV4 or Google's
	// application default credentials. CloudScope is the SigV4 service or
	// the OAuth scope.
	Cloud      Cloud
	CloudScope string
	// Retrievers say which retriever prunes the requests of each API the
	// provider serves; a route's API without one is pruned by the first.
	Retrievers []Retriever
	// Models, when set, is a setting mapping the names a route gives models
	// (Azure's deployments) to model names, for prices and context windows.
	Models Setting
	// ClientKeyEnv is the variable its SDKs read the user's key from, which
	// `focusgate prune` and `eval` use as the user's own credential; empty
	// when its clients authenticate otherwise.
	ClientKeyEnv string
	// ErrorBody is one of focusgate's own errors in the provider's shape,
	// so that its SDKs raise it like any other API error. typ and code are
	// OpenAI's error type and code; shapes without them derive theirs from
	// the status. ErrorHeader, when set, adds the headers its SDKs read the
	// error's kind from (Bedrock's x-amzn-errortype).
	ErrorBody   func(status int, message, typ, code string) []byte
	ErrorHeader func(h http.Header, status int)
	// ContextOverflow says whether an upstream answer refuses a request as
	// longer than the model's context window.
	ContextOverflow func(status int, body []byte) bool
	// Prices are the list prices of its models, and Windows their context
	// windows in tokens (see the pricing package). Model names are read
	// with BaseModel, so that a cloud's model ids find their family.
	Prices  map[string]Price
	Windows map[string]int
}

// Route is one inspected request of a provider.
type Route struct {
	// Pattern is the request path. A segment "{name}" matches any one
	// non-empty segment and names it; a segment "{name}:verb" matches one
	// ending in ":verb" (Gemini's and Vertex AI's methods follow a colon,
	// which does not suit routers' ":param" syntax). The variable "model"
	// names the action model. Segments are matched decoded: a model id
	// sent with %3A for its colon matches as if sent with the colon. A path
	// is matched the way a lenient server would read it, so that no
	// spelling of a route escapes inspection: empty segments ("//") and a
	// trailing "/" are ignored, and the pattern's own words and verbs are
	// compared without regard to case. The path is forwarded as it came.
	Pattern string
	// API says how the body is read.
	API API
	// Sizing marks a request that counts tokens rather than asks for an
	// answer (count_tokens, countTokens): a body that is one tool output
	// passes as it came (see the README).
	Sizing bool
	// Upstream, when set, is the path the request goes to upstream in place
	// of its own: clients that join a route onto a base URL without the
	// API's version (the AI SDK's Anthropic provider posts /messages) reach
	// the route the upstream serves.
	Upstream string
}

// Retriever is the retriever of one API of a provider: the model that
// reads the pages of its requests, called on the same provider with the
// same credentials.
type Retriever struct {
	// API is the API of the requests it prunes.
	API API
	// Speaks is the API of its calls: APIChat, APIMessages or APIGemini.
	Speaks API
	// Model is the setting of its model.
	Model Setting
	// Path is the call's path, joined onto the provider's URL: "{model}"
	// is the retriever model, any other "{name}" the request's route
	// variable of that name (Vertex AI's project and location).
	Path string
	// Version, when set, is the anthropic_version a Messages call names in
	// its body in place of a model, which its path names (Bedrock's and
	// Vertex AI's Claude).
	Version string
}

// Setting is one setting of a provider: its environment variable after the
// FOCUSGATE_ prefix, its default and its one-line description. Package
// config reads every provider's settings; several providers may share one
// (Vertex AI's Gemini retriever is the Gemini API's).
type Setting struct {
	Name, Default, Help string
	// Expand, when set, completes the value once it is loaded from what
	// the gateway's environment says (Bedrock's region, from AWS_REGION).
	Expand func(value string, getenv func(string) string) string
}

// URLError says why a request cannot go to its provider's upstream: a
// route variable that names no place the provider serves, or a setting the
// provider lacks. The gateway answers with Status and Message.
type URLError struct {
	Status  int
	Message string
}

func (e *URLError) Error() string { return e.Message }

// Cloud is a kind of credential the gateway finds in its environment.
type Cloud uint8

const (
	// CloudNone: the provider takes a static key (Key) or the client's own.
	CloudNone Cloud = iota
	// CloudSigV4 signs each request with AWS Signature Version 4, with
	// credentials from the AWS SDK's default chain.
	CloudSigV4
	// CloudGoogle sends an OAuth access token from Google's application
	// default credentials.
	CloudGoogle
)

// Signer puts the gateway's credential for a provider on an outgoing
// request, once its headers and body are final: a static key in a header,
// an AWS SigV4 signature over the body, a Google access token. Package
// cloudauth has the implementations.
type Signer interface {
	// Ready says whether the gateway holds a credential of this kind,
	// looking for one on first use. A request to a provider whose signer is
	// not ready carries the client's own credential.
	Ready(ctx context.Context) bool
	// Sign authorizes r, whose body is body, replacing what the client put
	// in the provider's credential places.
	Sign(ctx context.Context, r *http.Request, body []byte) error
}

// ErrNoCredentials says that the gateway has no credential of the kind a
// signer needs.
var ErrNoCredentials = errors.New("no credentials")

// CredentialKind says how a credential travels.
type CredentialKind uint8

const (
	// CredentialBearer is the token of an "Authorization: Bearer" header.
	CredentialBearer CredentialKind = iota
	// CredentialHeader is the whole value of a header.
	CredentialHeader
	// CredentialQuery is the value of a query parameter.
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
		c.Remove(r)
		pair := url.QueryEscape(c.Name) + "=" + url.QueryEscape(key)
		if r.URL.RawQuery == "" {
			r.URL.RawQuery = pair
		} else {
			r.URL.RawQuery += "&" + pair
		}
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

// ClientCredential is a client's own credential and where it came: a
// retriever call of the client's provider carries it in the same place.
type ClientCredential struct {
	Place Credential
	Value string
}

// Credential returns the client's own credential as r carries it for this
// provider: the first of its places that holds one, or the zero value.
func (p *Provider) Credential(r *http.Request) ClientCredential {
	for _, c := range p.Credentials {
		if v := c.In(r); v != "" {
			return ClientCredential{Place: c, Value: v}
		}
	}
	return ClientCredential{}
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

// RetrieverFor is the provider's retriever of the requests of api: the one
// declared for it, else the first.
func (p *Provider) RetrieverFor(api API) Retriever {
	for _, r := range p.Retrievers {
		if r.API == api {
			return r
		}
	}
	return p.Retrievers[0]
}

// Settings lists every setting the provider reads, in the order of its
// declaration: URL, key, retriever models, model names.
func (p *Provider) Settings() []Setting {
	out := []Setting{p.URL}
	if p.Key.Name != "" {
		out = append(out, p.Key)
	}
	for _, r := range p.Retrievers {
		if !hasSetting(out, r.Model.Name) {
			out = append(out, r.Model)
		}
	}
	if p.Models.Name != "" {
		out = append(out, p.Models)
	}
	return out
}

func hasSetting(s []Setting, name string) bool {
	for _, x := range s {
		if x.Name == name {
			return true
		}
	}
	return false
}

// Providers lists every provider focusgate speaks, in the order requests
// are matched against their routes and claims: the clouds, whose paths are
// their own, come first, so that a request claimed by its path is never
// taken by a header another provider's clients also send.
var Providers = []*Provider{
	&BedrockProvider, &VertexProvider, &VertexExpressProvider, &AzureProvider,
	&OpenAIProvider, &AnthropicProvider, &GeminiProvider,
}

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

// maxVars bounds the variables one route names.
const maxVars = 4

// Vars are the variables a request's route named ("model", "project",
// "location"), as their decoded segments. The zero value names none.
type Vars struct {
	n     int
	names [maxVars]string
	vals  [maxVars]string
}

// Get returns the variable called name, or "".
func (v Vars) Get(name string) string {
	for i := range v.n {
		if v.names[i] == name {
			return v.vals[i]
		}
	}
	return ""
}

func (v *Vars) set(name, value string) bool {
	if v.n == maxVars {
		return false
	}
	v.names[v.n], v.vals[v.n] = name, value
	v.n++
	return true
}

// Fill replaces each "{name}" of template with the variable of that name,
// or with what extra gives for names that are no variable ("model" for a
// retriever's path). ok is false when a name has no value.
func (v Vars) Fill(template string, extra func(name string) string) (string, bool) {
	if !strings.Contains(template, "{") {
		return template, true
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(template, '{')
		if i < 0 {
			b.WriteString(template)
			return b.String(), true
		}
		j := strings.IndexByte(template[i:], '}')
		if j < 0 {
			return "", false
		}
		name := template[i+1 : i+j]
		val := ""
		if extra != nil {
			val = extra(name)
		}
		if val == "" {
			val = v.Get(name)
		}
		if val == "" {
			return "", false
		}
		b.WriteString(template[:i])
		b.WriteString(url.PathEscape(val))
		template = template[i+j+1:]
	}
}

// Match is what the router learns of a request from the declarations.
type Match struct {
	Provider *Provider
	// Route is the inspected route the request took; nil for a request
	// that passes through.
	Route *Route
	// Vars are the variables its route named.
	Vars Vars
}

// Model is the model the request's path names (Gemini's, Bedrock's, Vertex
// AI's and Azure's requests name it there), or "".
func (m Match) Model() string { return m.Vars.Get("model") }

// MatchRequest finds the provider of a request and, for an inspected one,
// its route: the first route whose pattern fits a POST's path, else the
// first provider that claims the request, else DefaultProvider.
func MatchRequest(r *http.Request) Match {
	if r.Method == http.MethodPost {
		var buf [maxRouteSegments]string
		if segs, ok := pathSegments(r.URL.EscapedPath(), buf[:0]); ok {
			for _, p := range Providers {
				for i := range p.Routes {
					if vars, ok := matchPattern(p.Routes[i].Pattern, segs); ok {
						return Match{Provider: p, Route: &p.Routes[i], Vars: vars}
					}
				}
			}
		}
	}
	for _, p := range Providers {
		if p.Claims != nil && p.Claims(r) {
			return Match{Provider: p, Vars: p.pathVars(r.URL.EscapedPath())}
		}
	}
	return Match{Provider: DefaultProvider}
}

// maxRouteSegments bounds the segments of a path that can fit a route; the
// longest route has nine.
const maxRouteSegments = 16

// pathSegments appends to segs the decoded non-empty segments of an escaped
// path, once for every route it is matched against; ok is false when the
// path is not absolute, a segment does not decode, or there are more
// segments than any route has.
func pathSegments(path string, segs []string) (_ []string, ok bool) {
	if !strings.HasPrefix(path, "/") {
		return nil, false
	}
	for raw, rest := nextSegment(path); raw != ""; raw, rest = nextSegment(rest) {
		seg, err := url.PathUnescape(raw)
		if err != nil || len(segs) == maxRouteSegments {
			return nil, false
		}
		segs = append(segs, seg)
	}
	return segs, true
}

// pathVars are the variables that the start of a path its routes do not
// take names, by the route that fits the most of its segments: a Vertex AI
// request passing through names its location there too, which its host
// depends on.
func (p *Provider) pathVars(path string) Vars {
	var best Vars
	most := 0
	for _, rt := range p.Routes {
		var vars Vars
		n := 0
		raw, rest := nextSegment(path)
		for pseg := range strings.SplitSeq(strings.TrimPrefix(rt.Pattern, "/"), "/") {
			seg, err := url.PathUnescape(raw)
			if raw == "" || err != nil || !matchSegment(pseg, seg, &vars) {
				break
			}
			n++
			raw, rest = nextSegment(rest)
		}
		if n > most {
			best, most = vars, n
		}
	}
	return best
}

// matchPattern says whether a path, as its decoded segments, fits pattern
// (see Route.Pattern), and with which variables.
func matchPattern(pattern string, segs []string) (vars Vars, ok bool) {
	n := 0
	for pseg := range strings.SplitSeq(strings.TrimPrefix(pattern, "/"), "/") {
		if n == len(segs) || !matchSegment(pseg, segs[n], &vars) {
			return vars, false
		}
		n++
	}
	return vars, n == len(segs)
}

// nextSegment is the first non-empty segment of an escaped path, and the
// rest of the path after it.
func nextSegment(path string) (seg, rest string) {
	seg, rest, _ = strings.Cut(strings.TrimLeft(path, "/"), "/")
	return seg, rest
}

// matchSegment matches one decoded path segment against a pattern's.
func matchSegment(pseg, seg string, vars *Vars) bool {
	if !strings.HasPrefix(pseg, "{") {
		return strings.EqualFold(pseg, seg)
	}
	end := strings.IndexByte(pseg, '}')
	name, suffix := pseg[1:end], pseg[end+1:]
	if suffix == "" {
		return vars.set(name, seg)
	}
	// "{model}:generateContent": the name is what precedes the verb, and
	// holds no colon of its own.
	if len(seg) <= len(suffix) || !strings.EqualFold(seg[len(seg)-len(suffix):], suffix) {
		return false
	}
	value := seg[:len(seg)-len(suffix)]
	if strings.Contains(value, ":") {
		return false
	}
	return vars.set(name, value)
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
