package focusgate

import (
	"encoding/json"
	"net/http"
	"strings"
)

// GeminiProvider is Google's Gemini API (Gemini CLI, the Gen AI SDKs), at
// FOCUSGATE_GEMINI_URL, forwarded natively. Gemini on Vertex AI is
// VertexProvider's.
var GeminiProvider = Provider{
	Name:   "gemini",
	Routes: geminiRoutes(),
	Claims: geminiClaims,
	// Gemini CLI and the SDKs send x-goog-api-key, REST examples ?key=,
	// some clients an OAuth bearer token.
	Credentials:     []Credential{{Kind: CredentialHeader, Name: "X-Goog-Api-Key"}, {Kind: CredentialQuery, Name: "key"}, {Kind: CredentialBearer, Name: "Authorization"}},
	URL:             Setting{Name: "GEMINI_URL", Default: "https://generativelanguage.googleapis.com", Help: "base URL of the Gemini API, as GOOGLE_GEMINI_BASE_URL is given; .../models/{model}:generateContent, :streamGenerateContent and :countTokens and other Gemini requests go there"},
	Key:             Setting{Name: "GEMINI_API_KEY", Help: "Gemini API key sent upstream as x-goog-api-key: with client keys, in place of the client's gateway key; without, only when the client sends no credential"},
	Retrievers:      []Retriever{{API: APIGemini, Speaks: APIGemini, Model: geminiRetrieverModel, Path: "/v1beta/models/{model}:generateContent"}},
	ClientKeyEnv:    "GEMINI_API_KEY",
	ErrorBody:       googleError,
	ContextOverflow: geminiContextOverflow,
	Prices:          geminiPrices,
	Windows:         geminiWindows,
}

// geminiRetrieverModel prunes Gemini requests, on the Gemini API and on
// Vertex AI alike.
var geminiRetrieverModel = Setting{Name: "GEMINI_RETRIEVER_MODEL", Default: "gemini-2.5-flash-lite", Help: "retriever model for Gemini requests (called through generateContent on the request's provider: the Gemini API or Vertex AI)"}

// geminiPrices are standard list prices for prompts up to 200k tokens (Pro
// models cost more above) and text input, as published by Google when
// written; Vertex AI charges the same.
var geminiPrices = map[string]Price{
	"gemini-3.1-pro":        {2, 12},
	"gemini-3-pro":          {2, 12},
	"gemini-3-flash":        {0.50, 3},
	"gemini-2.5-pro":        {1.25, 10},
	"gemini-2.5-flash":      {0.30, 2.50},
	"gemini-2.5-flash-lite": {0.10, 0.40},
	"gemini-2.0-flash":      {0.10, 0.40},
	"gemini-2.0-flash-lite": {0.075, 0.30},
}

// geminiWindows are Gemini's context windows.
var geminiWindows = map[string]int{
	"gemini-1.5-pro":        2_097_152,
	"gemini-1.5-flash":      1_048_576,
	"gemini-2.0-flash":      1_048_576,
	"gemini-2.0-flash-lite": 1_048_576,
	"gemini-2.5-pro":        1_048_576,
	"gemini-2.5-flash":      1_048_576,
	"gemini-2.5-flash-lite": 1_048_576,
	"gemini-3-pro":          1_048_576,
	"gemini-3-flash":        1_048_576,
}

// geminiMethods are the inspected methods; countTokens sizes a request.
var geminiMethods = []struct {
	name   string
	sizing bool
}{{"generateContent", false}, {"streamGenerateContent", false}, {"countTokens", true}}

// geminiRoutes are the methods under the prefixes given: the Gemini API's
// versions, or Vertex AI's publisher model paths.
func geminiRoutes(prefixes ...string) []Route {
	if len(prefixes) == 0 {
		// A model named with its resource prefix ("models/gemini-2.5-flash")
		// by a client that adds the prefix again is read as that model.
		prefixes = []string{"/v1beta/models/", "/v1/models/", "/v1alpha/models/", "/v1beta/models/models/", "/v1/models/models/", "/v1alpha/models/models/"}
	}
	var routes []Route
	for _, m := range geminiMethods {
		for _, prefix := range prefixes {
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
	for _, prefix := range []string{"/v1beta/", "/v1alpha/", "/upload/v1beta/"} {
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

// googleError is Google's error body,
// {"error":{"code":401,"message":"...","status":"UNAUTHENTICATED"}}.
func googleError(status int, message, _, _ string) []byte {
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
