package cloudtest

import (
	"cmp"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// VertexOptions configure NewVertex; the zero value serves any project and
// location and answers "OK".
type VertexOptions struct {
	// Project and Location, when set, are the only ones served: a path
	// naming another is refused with 403, as for a project the credential
	// has no access to.
	Project, Location string
	// Open accepts any credential, and none, recording what came.
	Open   bool
	Answer Answer
	// APIKey is the key express mode's paths (/v1[beta1]/publishers/
	// google/models/, which name no project) take in x-goog-api-key or
	// ?key=, and take alone; empty: TestVertexAPIKey.
	APIKey string
}

// TestVertexAPIKey is the Vertex fake's express mode API key when its
// options name none.
const TestVertexAPIKey = "AQ.cloudtest-not-a-real-vertex-key"

// Vertex is a fake Vertex AI endpoint (what a client's
// {location}-aiplatform.googleapis.com names) with its own OAuth2 token
// endpoint, stopped when its test ends.
type Vertex struct {
	URL string
	// TokenURL is the token endpoint: the service account's token_uri.
	TokenURL string
	// ClientEmail is the service account's identity.
	ClientEmail string
	recorder
	opts VertexOptions
	key  *rsa.PrivateKey

	mu     sync.Mutex
	tokens map[string]bool // the access tokens issued
}

// serviceAccountKey is the RSA key pair of the fakes' service account,
// made once per test binary: making one takes long enough under the race
// detector to be worth sharing.
var serviceAccountKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// NewVertex starts a fake Vertex AI.
func NewVertex(t T, opts VertexOptions) *Vertex {
	t.Helper()
	return newVertex(t, opts, serviceAccountKey())
}

func newVertex(t T, opts VertexOptions, key *rsa.PrivateKey) *Vertex {
	if opts.Answer == nil {
		opts.Answer = TextAnswer("OK")
	}
	v := &Vertex{opts: opts, key: key, tokens: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(v.serve))
	t.Cleanup(srv.Close)
	v.URL, v.TokenURL = srv.URL, srv.URL+"/token"
	project := opts.Project
	if project == "" {
		project = "cloudtest-project"
	}
	v.ClientEmail = "cloudtest@" + project + ".iam.gserviceaccount.com"
	return v
}

// ServiceAccountJSON is the service account's key file, as the Cloud
// console hands it out, with token_uri pointing at the fake.
func (v *Vertex) ServiceAccountJSON() []byte {
	der, err := x509.MarshalPKCS8PrivateKey(v.key)
	if err != nil {
		panic(err)
	}
	project := v.opts.Project
	if project == "" {
		project = "cloudtest-project"
	}
	b, err := json.MarshalIndent(map[string]string{
		"type": "service_account", "project_id": project, "private_key_id": "cloudtest-key",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": v.ClientEmail, "client_id": "100000000000000000001",
		"auth_uri": v.URL + "/auth", "token_uri": v.TokenURL, "universe_domain": "googleapis.com",
	}, "", "  ")
	if err != nil {
		panic(err)
	}
	return b
}

// CredentialsFile writes ServiceAccountJSON to a file in a temporary
// directory of t, for GOOGLE_APPLICATION_CREDENTIALS, and returns its path.
func (v *Vertex) CredentialsFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "service-account.json")
	if err := os.WriteFile(path, v.ServiceAccountJSON(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Token issues an access token without the token flow, for a client that
// is handed a token rather than a service account (the Node Google auth
// library sends service accounts to Google's own token endpoint, whatever
// their token_uri says).
func (v *Vertex) Token() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	tok := fmt.Sprintf("ya29.cloudtest-%d", len(v.tokens)+1)
	v.tokens[tok] = true
	return tok
}

// vertexRoute reads a Vertex AI model path: /{v1,v1beta1}/projects/{p}/
// locations/{l}/publishers/{anthropic,google}/models/{m}:{method}, or
// express mode's /{v1,v1beta1}/publishers/google/models/{m}:{method}.
type vertexRoute struct {
	project, location, publisher, model, method string
	express                                     bool
}

func parseVertexRoute(path string) (vertexRoute, bool) {
	var vr vertexRoute
	p, err := url.PathUnescape(path)
	if err != nil {
		return vr, false
	}
	s := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if len(s) == 5 && (s[0] == "v1" || s[0] == "v1beta1") && s[1] == "publishers" && s[2] == "google" && s[3] == "models" {
		model, method, ok := strings.Cut(s[4], ":")
		vr = vertexRoute{publisher: "google", model: model, method: method, express: true}
		switch method {
		case "generateContent", "streamGenerateContent", "countTokens":
			return vr, ok && model != ""
		}
		return vr, false
	}
	if len(s) != 9 || (s[0] != "v1" && s[0] != "v1beta1") || s[1] != "projects" || s[3] != "locations" || s[5] != "publishers" || s[7] != "models" {
		return vr, false
	}
	model, method, ok := strings.Cut(s[8], ":")
	if !ok || model == "" {
		return vr, false
	}
	vr = vertexRoute{project: s[2], location: s[4], publisher: s[6], model: model, method: method}
	switch vr.publisher + ":" + method {
	case "anthropic:rawPredict", "anthropic:streamRawPredict",
		"google:generateContent", "google:streamGenerateContent", "google:countTokens":
		return vr, true
	}
	return vr, false
}

func (v *Vertex) serve(w http.ResponseWriter, r *http.Request) {
	req, err := readRequest(r)
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		req.Status = sw.status
		v.add(req)
	}()
	if err != nil {
		googleError(sw, Refusal{http.StatusBadRequest, "INVALID_ARGUMENT", err.Error()})
		return
	}
	if req.Path == "/token" && r.Method == http.MethodPost {
		req.Route = "token"
		v.token(sw, r, req.Body)
		return
	}
	vr, ok := parseVertexRoute(req.Path)
	if !ok || r.Method != http.MethodPost {
		googleError(sw, Refusal{http.StatusNotFound, "NOT_FOUND", "The requested URL " + req.Path + " was not found on this server."})
		return
	}
	req.Route, req.Model = vr.method, vr.model
	if vr.publisher == "anthropic" && vr.model == "count-tokens" {
		req.Route, req.Model = "count-tokens", ""
	}
	auth, refusal := v.authenticate(r)
	if vr.express {
		auth, refusal = v.authenticateKey(r)
	}
	if refusal != nil && !v.opts.Open {
		googleError(sw, *refusal)
		return
	}
	req.Auth = auth
	if v.opts.Open && auth == "" {
		req.Auth = "open"
	}
	if !vr.express && ((v.opts.Project != "" && vr.project != v.opts.Project) || (v.opts.Location != "" && vr.location != v.opts.Location)) {
		googleError(sw, Refusal{http.StatusForbidden, "PERMISSION_DENIED",
			fmt.Sprintf("Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/projects/%s/locations/%s/publishers/%s/models/%s' (or it may not exist).", vr.project, vr.location, vr.publisher, vr.model)})
		return
	}
	if !json.Valid(req.Body) {
		googleError(sw, Refusal{http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received."})
		return
	}
	switch req.Route {
	case "count-tokens":
		writeJSON(sw, http.StatusOK, map[string]int{"input_tokens": len(req.Body)/4 + 1})
		return
	case "countTokens":
		writeJSON(sw, http.StatusOK, map[string]int{"totalTokens": len(req.Body)/4 + 1, "totalBillableCharacters": len(req.Body)})
		return
	}
	if vr.publisher == "anthropic" && !gjson.GetBytes(req.Body, "anthropic_version").Exists() {
		writeJSON(sw, http.StatusBadRequest, anthropicError(Refusal{Code: "invalid_request_error", Message: "anthropic_version: Field required"}))
		return
	}
	call := Call{API: Gemini, Route: vr.method, Model: vr.model, Body: req.Body, Stream: strings.HasPrefix(vr.method, "stream")}
	if vr.publisher == "anthropic" {
		call.API = Anthropic
	}
	reply := v.opts.Answer(call)
	if reply.Refusal != nil {
		if call.API == Anthropic {
			writeJSON(sw, reply.Refusal.Status, anthropicError(*reply.Refusal))
		} else {
			googleError(sw, *reply.Refusal)
		}
		return
	}
	switch vr.method {
	case "rawPredict":
		writeJSON(sw, http.StatusOK, anthropicMessage(vr.model, reply))
	case "streamRawPredict":
		sw.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		sw.WriteHeader(http.StatusOK)
		for _, ev := range anthropicEvents(vr.model, reply) {
			sse(sw, ev.Type, ev.Data)
		}
	case "generateContent":
		writeJSON(sw, http.StatusOK, geminiAnswer(vr.model, reply, true))
	case "streamGenerateContent":
		geminiStream(sw, r.URL.Query().Get("alt") == "sse", vr.model, reply)
	}
}

// VertexPromptTooLong is the refusal of a prompt over the model's context
// window: Claude's on Vertex (an Anthropic error body), and Gemini's.
func VertexPromptTooLong(api string, tokens, window int) *Refusal {
	if api == Anthropic {
		return &Refusal{http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("prompt is too long: %d tokens > %d maximum", tokens, window)}
	}
	return &Refusal{http.StatusBadRequest, "INVALID_ARGUMENT", fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d).", tokens, window)}
}

// googleError answers in the shape of Google's APIs, which Vertex uses for
// its own errors, Claude's routes included.
func googleError(w http.ResponseWriter, ref Refusal) {
	writeJSON(w, ref.Status, map[string]any{"error": map[string]any{"code": ref.Status, "message": ref.Message, "status": ref.Code}})
}

// authenticate accepts the access tokens the fake issued, as bearer tokens.
func (v *Vertex) authenticate(r *http.Request) (string, *Refusal) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	v.mu.Lock()
	issued := ok && v.tokens[tok]
	v.mu.Unlock()
	if issued {
		return "oauth", nil
	}
	return "", &Refusal{http.StatusUnauthorized, "UNAUTHENTICATED",
		"Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."}
}

// authenticateKey accepts express mode's API key, in x-goog-api-key or
// ?key=; express mode takes no access token.
func (v *Vertex) authenticateKey(r *http.Request) (string, *Refusal) {
	want := cmp.Or(v.opts.APIKey, TestVertexAPIKey)
	if k := cmp.Or(r.Header.Get("X-Goog-Api-Key"), r.URL.Query().Get("key")); k == want {
		return "api-key", nil
	}
	return "", &Refusal{http.StatusBadRequest, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."}
}

// token is the OAuth2 token endpoint: the JWT-bearer grant (RFC 7523) a
// service account makes, its assertion signed with RS256 by the service
// account's key, issued by its email, for this endpoint, within its hour.
func (v *Vertex) token(w http.ResponseWriter, r *http.Request, body []byte) {
	form, err := url.ParseQuery(string(body))
	if err != nil || form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type", "error_description": "Invalid grant_type: " + form.Get("grant_type")})
		return
	}
	claims, problem := v.verifyJWT(form.Get("assertion"))
	if problem != "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": problem})
		return
	}
	if claims.Scope == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_scope", "error_description": "Invalid OAuth scope or ID token audience provided."})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"access_token": v.Token(), "expires_in": 3599, "token_type": "Bearer"})
}

type jwtClaims struct {
	Iss   string `json:"iss"`
	Aud   string `json:"aud"`
	Scope string `json:"scope"`
	Iat   int64  `json:"iat"`
	Exp   int64  `json:"exp"`
}

// verifyJWT checks a compact RS256 JWS against the service account's
// public key and reads its claims. Expiry is checked against the clock
// with Google's own hour, which no test comes near.
func (v *Vertex) verifyJWT(assertion string) (c jwtClaims, problem string) {
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return c, "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe."
	}
	var header struct {
		Alg string `json:"alg"`
	}
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || json.Unmarshal(hb, &header) != nil || header.Alg != "RS256" {
		return c, "Invalid JWT header"
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return c, "Invalid JWT Signature."
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(&v.key.PublicKey, crypto.SHA256, sum[:], sig) != nil {
		return c, "Invalid JWT Signature."
	}
	cb, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(cb, &c) != nil {
		return c, "Invalid JWT claims"
	}
	if c.Iss != v.ClientEmail {
		return c, "Invalid JWT: the issuer " + c.Iss + " is not the service account"
	}
	if c.Aud != v.TokenURL {
		return c, "Invalid JWT: the audience " + c.Aud + " is not the token endpoint " + v.TokenURL
	}
	if now := time.Now().Unix(); c.Exp < now || c.Exp-c.Iat > 3600 {
		return c, "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."
	}
	return c, ""
}

// geminiAnswer is one generateContent response; a streamed answer is a
// series of them, the last with the finish reason and usage.
func geminiAnswer(model string, r Reply, last bool) map[string]any {
	parts := []any{}
	if r.Text != "" {
		parts = append(parts, map[string]any{"text": r.Text})
	}
	for _, c := range r.ToolCalls {
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": c.Name, "args": c.input()}})
	}
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}}
	ans := map[string]any{"candidates": []any{cand}, "modelVersion": model, "responseId": "cloudtest-response",
		"createTime": "2025-01-01T00:00:00.000000Z"}
	if last {
		cand["finishReason"] = "STOP"
		in, out := r.usage()
		ans["usageMetadata"] = map[string]any{"promptTokenCount": in, "candidatesTokenCount": out, "totalTokenCount": in + out,
			"trafficType": "ON_DEMAND"}
	}
	return ans
}

// geminiStream answers streamGenerateContent: with alt=sse as server-sent
// events ("data: {...}" each, no event names), otherwise as one JSON array
// whose elements arrive as they are made.
func geminiStream(w http.ResponseWriter, asSSE bool, model string, r Reply) {
	chunks := []map[string]any{geminiAnswer(model, r, true)}
	if text := []rune(r.Text); len(text) > 1 && len(r.ToolCalls) == 0 {
		// Two chunks, so that a client's joining of parts is exercised.
		half := len(text) / 2
		chunks = []map[string]any{geminiAnswer(model, Reply{Text: string(text[:half])}, false),
			geminiAnswer(model, Reply{Text: string(text[half:]), InputTokens: r.InputTokens, OutputTokens: r.OutputTokens}, true)}
	}
	if asSSE {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, c := range chunks {
			b, _ := json.Marshal(c)
			fmt.Fprintf(w, "data: %s\r\n\r\n", b)
			w.(http.Flusher).Flush()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	for i, c := range chunks {
		b, _ := json.Marshal(c)
		sep := ",\r\n"
		if i == 0 {
			sep = "["
		}
		fmt.Fprintf(w, "%s%s", sep, b)
		w.(http.Flusher).Flush()
	}
	fmt.Fprint(w, "]")
}
