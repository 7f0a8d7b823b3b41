package focusgate

import (
	"encoding/json"
	"net/http"
	"strings"
)

// AnthropicProvider is Anthropic's Messages API (Claude Code's only API),
// at FOCUSGATE_ANTHROPIC_URL, forwarded natively.
var AnthropicProvider = Provider{
	Name: "anthropic",
	Routes: []Route{
		{Pattern: "/v1/messages", API: APIMessages},
		{Pattern: "/messages", API: APIMessages},
		// count_tokens sizes a request as it would be sent: it is
		// rewritten the same way (see README, Anthropic and Claude Code).
		{Pattern: "/v1/messages/count_tokens", API: APIMessages, Sizing: true},
		{Pattern: "/messages/count_tokens", API: APIMessages, Sizing: true},
	},
	// Every Anthropic client names an API version: Claude Code's other
	// calls pass through to the Anthropic upstream that way.
	Claims: func(r *http.Request) bool { return r.Header.Get("Anthropic-Version") != "" },
	// ANTHROPIC_API_KEY travels in x-api-key, ANTHROPIC_AUTH_TOKEN (and a
	// Claude subscription's OAuth token) as a bearer token.
	Credentials:  []Credential{{Kind: CredentialHeader, Name: "X-Api-Key"}, {Kind: CredentialBearer, Name: "Authorization"}},
	ClientKeyEnv: "ANTHROPIC_API_KEY",
	Settings: Settings{
		URL: "ANTHROPIC_URL", Key: "ANTHROPIC_API_KEY", RetrieverModel: "ANTHROPIC_RETRIEVER_MODEL",
		DefaultURL: "https://api.anthropic.com", DefaultRetrieverModel: "claude-haiku-4-5",
	},
	ErrorBody:       anthropicError,
	ContextOverflow: anthropicContextOverflow,
	// A Claude version not listed takes its family's price
	// (claude-opus-4-6 that of claude-opus-4), which may be above its list
	// price.
	Prices: map[string]Price{
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
	},
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
