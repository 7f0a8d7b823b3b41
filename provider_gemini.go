package focusgate

import (
	"encoding/json"
	"net/http"
	"strings"
)

// GeminiProvider is Google's Gemini API (Gemini CLI, the Gen AI SDKs) and
// its Vertex AI form, at FOCUSGATE_GEMINI_URL, forwarded natively.
var GeminiProvider = Provider{
	Name:   "gemini",
	Routes: geminiRoutes(),
	Claims: geminiClaims,
	// Gemini CLI and the SDKs send x-goog-api-key, REST examples ?key=,
	// Vertex AI an OAuth bearer token.
	Credentials:  []Credential{{Kind: CredentialHeader, Name: "X-Goog-Api-Key"}, {Kind: CredentialQuery, Name: "key"}, {Kind: CredentialBearer, Name: "Authorization"}},
	ClientKeyEnv: "GEMINI_API_KEY",
	Settings: Settings{
		URL: "GEMINI_URL", Key: "GEMINI_API_KEY", RetrieverModel: "GEMINI_RETRIEVER_MODEL",
		DefaultURL: "https://generativelanguage.googleapis.com", DefaultRetrieverModel: "gemini-2.5-flash-lite",
	},
	ErrorBody:       geminiError,
	ContextOverflow: geminiContextOverflow,
	// Standard list prices for prompts up to 200k tokens (Pro models cost
	// more above) and text input, as published by Google when written.
	Prices: map[string]Price{
		"gemini-3.1-pro":        {2, 12},
		"gemini-3-pro":          {2, 12},
		"gemini-3-flash":        {0.50, 3},
		"gemini-2.5-pro":        {1.25, 10},
		"gemini-2.5-flash":      {0.30, 2.50},
		"gemini-2.5-flash-lite": {0.10, 0.40},
		"gemini-2.0-flash":      {0.10, 0.40},
		"gemini-2.0-flash-lite": {0.075, 0.30},
	},
}

// geminiMethods are the inspected methods; countTokens sizes a request.
var geminiMethods = []struct {
	name   string
	sizing bool
}{{"generateContent", false}, {"streamGenerateContent", false}, {"countTokens", true}}

// geminiRoutes are the methods under the Gemini API's versions, and under
// Vertex AI's publisher model paths.
func geminiRoutes() []Route {
	var routes []Route
	for _, m := range geminiMethods {
		for _, prefix := range []string{
			"/v1beta/models/", "/v1/models/",
			"/v1/projects/{project}/locations/{location}/publishers/google/models/",
			"/v1beta1/projects/{project}/locations/{location}/publishers/google/models/",
		} {
			routes = append(routes, Route{Pattern: prefix + "{model}:" + m.name, API: APIGemini, Sizing: m.sizing})
		}
	}
	return routes
}

// geminiClaims says a request on no route speaks the Gemini API: it carries
// Gemini's key header or query parameter, or its path is one of Gemini's
// (a version only Google uses, or a model method after a colon), so that
// listing models or embedding reaches Gemini's upstream too.
func geminiClaims(r *http.Request) bool {
	if r.Header.Get("X-Goog-Api-Key") != "" {
		return true
	}
	p := r.URL.Path
	for _, prefix := range []string{"/v1beta/", "/v1alpha/", "/v1beta1/", "/upload/v1beta/", "/v1/projects/"} {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	if i := strings.LastIndex(p, "/models/"); i >= 0 && isModelMethod(p[i+len("/models/"):]) {
		return true
	}
	return r.URL.RawQuery != "" && r.URL.Query().Has("key")
}

// isModelMethod says whether a path's last segment is Gemini's
// "{model}:{method}" (gemini-2.5-flash:embedContent), which an OpenAI
// fine-tuned model's name (ft:gpt-4.1:acme::id) is not: one colon, then a
// method's name in letters.
func isModelMethod(seg string) bool {
	model, method, ok := strings.Cut(seg, ":")
	if !ok || model == "" || method == "" || strings.Contains(model, "/") {
		return false
	}
	for _, r := range method {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') {
			return false
		}
	}
	return true
}

// geminiError is Google's error body,
// {"error":{"code":401,"message":"...","status":"UNAUTHENTICATED"}}.
func geminiError(status int, message, _, _ string) []byte {
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	e.Error.Code, e.Error.Message, e.Error.Status = status, message, googleStatus(status)
	body, _ := json.Marshal(e)
	return body
}

// googleStatus is the canonical status Google's APIs give an HTTP status.
func googleStatus(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "INVALID_ARGUMENT"
}

// geminiContextOverflow recognises Gemini's refusal of a prompt over the
// context window: 400 INVALID_ARGUMENT, "The input token count (N) exceeds
// the maximum number of tokens allowed (M)".
func geminiContextOverflow(status int, body []byte) bool {
	e, ok := refusalOf(status, body)
	msg := strings.ToLower(e.Message)
	return ok && e.Status == "INVALID_ARGUMENT" && strings.Contains(msg, "input token count") && strings.Contains(msg, "exceeds the maximum")
}
