package prune

import (
	"cmp"
	"context"
	"net/http"
	"strings"

	"github.com/focusgate/focusgate"
)

// anthropicVersion is the Messages API version the retriever is written for.
const anthropicVersion = "2023-06-01"

// defaultAnthropicMaxTokens is sent when no output cap is configured: the
// Messages API requires one.
const defaultAnthropicMaxTokens = 4096

type anthropicMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type anthropicRequest struct {
	// Model names the model, except on the clouds, where the path names it
	// and Version the API's version.
	Model       string             `json:"model,omitempty"`
	Version     string             `json:"anthropic_version,omitempty"`
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
	// Message is Bedrock's error, which names its kind in a header.
	Message string `json:"message"`
}

// messagesCall asks Claude through the Messages API: Anthropic's own, or
// Bedrock's invoke and Vertex AI's rawPredict, which take the same body with
// the model in the path.
func messagesCall(ctx context.Context, c *client, x exchange, system string, turns []turn) (ans answer, usage focusgate.RetrieverUsage, err error) {
	ctx, span := startChat(ctx, "anthropic", c.cfg.Model)
	defer func() { endChat(span, usage, err) }()
	req := anthropicRequest{MaxTokens: cmp.Or(c.cfg.MaxTokens, defaultAnthropicMaxTokens), System: system}
	if req.Version = c.cfg.Version; req.Version == "" {
		req.Model = c.cfg.Model
	}
	for _, t := range turns {
		role := "user"
		if t.assistant {
			role = "assistant"
		}
		req.Messages = append(req.Messages, anthropicMessage{Role: role, Content: t.content})
	}
	var header http.Header
	if c.cfg.Version == "" {
		header = http.Header{"Anthropic-Version": {anthropicVersion}}
	}
	var out anthropicResponse
	err = postCall(ctx, c, x, header, req, &out, func() string {
		if out.Error == nil {
			return out.Message
		}
		return strings.TrimPrefix(out.Error.Type+": "+out.Error.Message, ": ")
	})
	if err != nil {
		return answer{}, focusgate.RetrieverUsage{}, err
	}
	var text strings.Builder
	for _, part := range out.Content {
		if part.Type == "text" {
			text.WriteString(part.Text)
		}
	}
	u := focusgate.RetrieverUsage{PromptTokens: out.Usage.InputTokens, CompletionTokens: out.Usage.OutputTokens}
	return answer{content: text.String(), cut: out.StopReason == "max_tokens"}, u, nil
}
