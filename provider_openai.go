package focusgate

import (
	"encoding/json"
	"strings"
)

// OpenAIProvider is OpenAI's API and every API compatible with it: chat
// completions and Responses, at FOCUSGATE_UPSTREAM_URL. It takes every
// request that no other provider routes or claims.
var OpenAIProvider = Provider{
	Name: "openai",
	Routes: []Route{
		{Pattern: "/v1/chat/completions", API: APIChat},
		{Pattern: "/chat/completions", API: APIChat},
		{Pattern: "/v1/responses", API: APIResponses},
		{Pattern: "/responses", API: APIResponses},
	},
	Credentials:  []Credential{{Kind: CredentialBearer, Name: "Authorization"}},
	ClientKeyEnv: "OPENAI_API_KEY",
	Settings: Settings{
		URL: "UPSTREAM_URL", Key: "UPSTREAM_API_KEY", RetrieverModel: "RETRIEVER_MODEL",
		DefaultURL: "https://api.openai.com/v1", DefaultRetrieverModel: "gpt-4.1-mini",
	},
	ErrorBody:       openAIError,
	ContextOverflow: openAIContextOverflow,
	Prices: map[string]Price{
		"gpt-5":         {1.25, 10},
		"gpt-5-mini":    {0.25, 2},
		"gpt-5-nano":    {0.05, 0.40},
		"gpt-4.1":       {2, 8},
		"gpt-4.1-mini":  {0.40, 1.60},
		"gpt-4.1-nano":  {0.10, 0.40},
		"gpt-4.5":       {75, 150},
		"gpt-4o":        {2.50, 10},
		"gpt-4o-mini":   {0.15, 0.60},
		"o1":            {15, 60},
		"o1-mini":       {1.10, 4.40},
		"o3":            {2, 8},
		"o3-mini":       {1.10, 4.40},
		"o4-mini":       {1.10, 4.40},
		"gpt-4-turbo":   {10, 30},
		"gpt-4":         {30, 60},
		"gpt-3.5-turbo": {0.50, 1.50},
	},
}

// openAIError is OpenAI's error body.
func openAIError(_ int, message, typ, code string) []byte {
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    string  `json:"code"`
		} `json:"error"`
	}
	e.Error.Message, e.Error.Type, e.Error.Code = message, typ, code
	body, _ := json.Marshal(e)
	return body
}

// openAIContextOverflow recognises OpenAI's refusal of a prompt over the
// context window: 400 with code context_length_exceeded, or, from
// compatible servers (vLLM, LiteLLM), a message about the maximum context
// length.
func openAIContextOverflow(status int, body []byte) bool {
	e, ok := refusalOf(status, body)
	return ok && (string(e.Code) == `"context_length_exceeded"` || strings.Contains(strings.ToLower(e.Message), "maximum context length"))
}
