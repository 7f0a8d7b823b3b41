package focusgate

import (
	"encoding/json"
	"net/http"
	"strings"
)

// AnthropicProvider is Anthropic's API (Claude Code's), at
// FOCUSGATE_ANTHROPIC_URL, forwarded natively.
var AnthropicProvider = Provider{
	Name: "anthropic",
	Routes: []Route{
		{Pattern: "/v1/messages", API: APIMessages},
		// The AI SDK's Anthropic provider (opencode, Kilo, Mastra) joins
		// /messages onto ANTHROPIC_BASE_URL: with the gateway's bare URL
		// there, its requests are Anthropic's /v1/messages.
		{Pattern: "/messages", API: APIMessages, Upstream: "/v1/messages"},
		// count_tokens sizes a request as it would be sent: it is
		// rewritten the same way (see README, Anthropic and Claude Code).
		{Pattern: "/v1/messages/count_tokens", API: APIMessages, Sizing: true},
		{Pattern: "/messages/count_tokens", API: APIMessages, Sizing: true, Upstream: "/v1/messages/count_tokens"},
	},
	// Every Anthropic client names an API version: Claude Code's other
	// calls pass through to the Anthropic upstream that way.
	Claims: func(r *http.Request) bool { return r.Header.Get("Anthropic-Version") != "" },
	// ANTHROPIC_API_KEY travels in x-api-key, ANTHROPIC_AUTH_TOKEN (and a
	// Claude subscription's OAuth token) as a bearer token.
	Credentials: []Credential{{Kind: CredentialHeader, Name: "X-Api-Key"}, {Kind: CredentialBearer, Name: "Authorization"}},
	URL:         Setting{Name: "ANTHROPIC_URL", Default: "https://api.anthropic.com", Help: "base URL of the Anthropic API, as ANTHROPIC_BASE_URL is given; the Messages routes and requests with an anthropic-version header go there"},
	Key:         Setting{Name: "ANTHROPIC_API_KEY", Help: "Anthropic API key sent upstream as x-api-key: with client keys, in place of the client's gateway key; without, only when the client sends no credential"},
	Retrievers: []Retriever{{API: APIMessages, Speaks: APIMessages, Path: "/v1/messages",
		Model: Setting{Name: "ANTHROPIC_RETRIEVER_MODEL", Default: "claude-haiku-4-5", Help: "retriever model for Anthropic requests (called through the Messages API at FOCUSGATE_ANTHROPIC_URL)"}}},
	ClientKeyEnv:    "ANTHROPIC_API_KEY",
	ErrorBody:       anthropicError,
	ContextOverflow: anthropicContextOverflow,
	Prices:          claudePrices,
	Windows:         claudeWindows,
}

// claudePrices are the list prices of Anthropic's models, which AWS Bedrock
// and Vertex AI charge too. A Claude version not listed takes its family's
// price (claude-opus-4-6 that of claude-opus-4), which may be above its list
// price.
var claudePrices = map[string]Price{
	"claude-opus-4":     {15, 75},
	"claude-opus-4-1":   {15, 75},
	"claude-opus-4-5":   {5, 25},
	"claude-sonnet-4":   {3, 15},
	"claude-sonnet-4-5": {3, 15},
	"claude-haiku-4-5":  {1, 5},
	"claude-3-7-sonnet": {3, 15},
	"claude-3-5-sonnet": {3, 15},
	"claude-3-5-haiku":  {0.80, 4},
	"claude-3-haiku":    {0.25, 1.25},
}

// claudeWindows are Claude's context windows. Its 1M-token window is a beta
// a client asks for with a header, so the table gives Claude the 200k every
// client has; a team on the beta raises it with FOCUSGATE_CONTEXT_WINDOWS.
var claudeWindows = map[string]int{
	"claude-opus-4":     200_000,
	"claude-sonnet-4":   200_000,
	"claude-haiku-4":    200_000,
	"claude-3-7-sonnet": 200_000,
	"claude-3-5-sonnet": 200_000,
	"claude-3-5-haiku":  200_000,
	"claude-3-haiku":    200_000,
}

// anthropicError is Anthropic's error body; its type follows from the
// status as Anthropic's API gives it.
func anthropicError(status int, message, _, _ string) []byte {
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	e.Type = "error"
	e.Error.Type, e.Error.Message = anthropicErrorType(status), message
	body, _ := json.Marshal(e)
	return body
}

func anthropicErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// anthropicContextOverflow recognises Anthropic's refusal of a prompt over
// the context window: 400 invalid_request_error, "prompt is too long: N
// tokens > M maximum".
func anthropicContextOverflow(status int, body []byte) bool {
	e, ok := refusalOf(status, body)
	return ok && e.Type == "invalid_request_error" && strings.Contains(e.Message, "prompt is too long")
}
