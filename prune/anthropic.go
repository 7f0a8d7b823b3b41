package prune

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/focusgate/focusgate"
)

// anthropicVersion is the Messages API version the retriever is written for.
const anthropicVersion = "2023-06-01"

// defaultAnthropicMaxTokens is sent when no output cap is configured: the
// Messages API requires one.
const defaultAnthropicMaxTokens = 4096

// AnthropicRetriever asks a Claude model, through the Anthropic Messages API,
// which lines of a tree matter: the retriever of a team that has only an
// Anthropic key. Prompts, answers, the re-ask and the deadline are the
// OpenAIRetriever's. It is safe for concurrent use.
type AnthropicRetriever struct {
	cfg RetrieverConfig
}

// NewAnthropicRetriever returns a retriever for cfg; cfg.BaseURL is the
// Anthropic API's base, without /v1.
func NewAnthropicRetriever(cfg RetrieverConfig) *AnthropicRetriever {
	cfg.HTTPClient = cappedClient(cfg.HTTPClient)
	cfg.BaseURL = strings.TrimSuffix(strings.TrimSuffix(cfg.BaseURL, "/"), "/v1")
	return &AnthropicRetriever{cfg: cfg}
}

// Select asks the retriever for the lines that matter to q (see ask).
func (r *AnthropicRetriever) Select(ctx context.Context, q Query) (Selection, error) {
	return ask(ctx, r, r.cfg.Timeout, cmp.Or(r.cfg.APIKey, q.APIKey), q)
}

type anthropicMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type anthropicRequest struct {
	Model       string             `json:"model"`
	MaxTokens   int                `json:"max_tokens"`
	System      string             `json:"system"`
	Messages    []anthropicMessage `json:"messages"`
	Temperature float64            `json:"temperature"`
}

type anthropicResponse struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
	Usage      struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func (r *AnthropicRetriever) complete(ctx context.Context, key, system string, turns []turn) (ans answer, usage focusgate.RetrieverUsage, err error) {
	ctx, span := startChat(ctx, "anthropic", r.cfg.Model)
	defer func() { endChat(span, usage, err) }()
	req := anthropicRequest{Model: r.cfg.Model, MaxTokens: cmp.Or(r.cfg.MaxTokens, defaultAnthropicMaxTokens), System: system}
	for _, t := range turns {
		role := "user"
		if t.assistant {
			role = "assistant"
		}
		req.Messages = append(req.Messages, anthropicMessage{Role: role, Content: t.content})
	}
	body, err := json.Marshal(req)
	if err != nil {
		return answer{}, focusgate.RetrieverUsage{}, fmt.Errorf("prune: retriever request: %w", err)
	}
	header := http.Header{"Anthropic-Version": {anthropicVersion}}
	if strings.HasPrefix(key, "sk-ant-oat") {
		// A Claude subscription's OAuth token (Claude Code's
		// ANTHROPIC_AUTH_TOKEN) is a bearer token, not an API key.
		header.Set("Authorization", "Bearer "+key)
	} else if key != "" {
		header.Set("X-Api-Key", key)
	}
	var out anthropicResponse
	err = postJSON(ctx, r.cfg.HTTPClient, r.cfg.BaseURL+"/v1/messages", header, body, &out, func() string {
		if out.Error == nil {
			return ""
		}
		return out.Error.Type + ": " + out.Error.Message
	})
	if err != nil {
		return answer{}, focusgate.RetrieverUsage{}, err
	}
	var text strings.Builder
	for _, c := range out.Content {
		if c.Type == "text" {
			text.WriteString(c.Text)
		}
	}
	u := focusgate.RetrieverUsage{PromptTokens: out.Usage.InputTokens, CompletionTokens: out.Usage.OutputTokens}
	return answer{content: text.String(), cut: out.StopReason == "max_tokens"}, u, nil
}
