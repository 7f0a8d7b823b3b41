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
	Credentials: []Credential{{Kind: CredentialBearer, Name: "Authorization"}},
	URL:         Setting{Name: "UPSTREAM_URL", Default: "https://api.openai.com/v1", Help: "base URL of the action model's API; request paths are joined onto it"},
	Key:         Setting{Name: "UPSTREAM_API_KEY", Help: "API key sent upstream: with client keys, in place of the client's gateway key; without, only when the client sends no Authorization"},
	Retrievers: []Retriever{
		{API: APIChat, Speaks: APIChat, Model: retrieverModel, Path: "/chat/completions"},
		{API: APIResponses, Speaks: APIChat, Model: retrieverModel, Path: "/chat/completions"},
	},
	ClientKeyEnv:    "OPENAI_API_KEY",
	ErrorBody:       openAIError,
	ContextOverflow: openAIContextOverflow,
	Windows:         openAIWindows,
	Prices:          openAIPrices,
}

// retrieverModel is the retriever of OpenAI-compatible requests, and of
// every request when FOCUSGATE_RETRIEVER_URL names one retriever for all.
var retrieverModel = Setting{Name: "RETRIEVER_MODEL", Default: "gpt-4.1-mini", Help: "retriever model"}

// openAIPrices are the list prices of OpenAI's models, which Azure OpenAI
// charges too.
var openAIPrices = map[string]Price{
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
}

// openAIWindows are the context windows of OpenAI's models, which Azure
// OpenAI serves too.
var openAIWindows = map[string]int{
	"gpt-5":         400_000,
	"gpt-5-mini":    400_000,
	"gpt-5-nano":    400_000,
	"gpt-4.1":       1_047_576,
	"gpt-4.1-mini":  1_047_576,
	"gpt-4.1-nano":  1_047_576,
	"gpt-4.5":       128_000,
	"gpt-4o":        128_000,
	"gpt-4o-mini":   128_000,
	"o1":            200_000,
	"o1-mini":       128_000,
	"o3":            200_000,
	"o3-mini":       200_000,
	"o4-mini":       200_000,
	"gpt-4-turbo":   128_000,
	"gpt-4":         8_192,
	"gpt-3.5-turbo": 16_385,
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
