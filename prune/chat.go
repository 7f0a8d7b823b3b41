package prune

import (
	"context"

	"github.com/focusgate/focusgate"
)

// chatMessage is one message of a chat completion.
type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chatRequest is an OpenAI-compatible chat completion, as every such server
// reads it.
type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
	// MaxTokens is the cap every OpenAI-compatible server knows; reasoning
	// models refuse it, and take MaxCompletionTokens, reasoning included.
	MaxTokens           int `json:"max_tokens,omitempty"`
	MaxCompletionTokens int `json:"max_completion_tokens,omitempty"`
	// Temperature 0 asks for the most likely answer; reasoning models
	// refuse any temperature but their default, so theirs is left out.
	Temperature *float64 `json:"temperature,omitempty"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

// chatCall asks through an OpenAI-compatible chat completion: OpenAI's API,
// Azure OpenAI's, and every server that copies them.
func chatCall(ctx context.Context, c *client, x exchange, system string, turns []turn) (ans answer, u focusgate.RetrieverUsage, err error) {
	ctx, span := startChat(ctx, "openai", c.cfg.Model)
	defer func() { endChat(span, u, err) }()
	req := chatRequest{Model: c.cfg.Model, Messages: []chatMessage{{Role: "system", Content: system}}}
	for _, t := range turns {
		role := "user"
		if t.assistant {
			role = "assistant"
		}
		req.Messages = append(req.Messages, chatMessage{Role: role, Content: t.content})
	}
	if isReasoningModel(c.cfg.Model) {
		req.MaxCompletionTokens = c.cfg.MaxTokens
	} else {
		zero := 0.0
		req.MaxTokens, req.Temperature = c.cfg.MaxTokens, &zero
	}
	var out chatResponse
	if err := postCall(ctx, c, x, nil, req, &out, func() string {
		if out.Error == nil {
			return ""
		}
		return out.Error.Message
	}); err != nil {
		return answer{}, focusgate.RetrieverUsage{}, err
	}
	u = focusgate.RetrieverUsage{PromptTokens: out.Usage.PromptTokens, CompletionTokens: out.Usage.CompletionTokens}
	if len(out.Choices) == 0 {
		return answer{}, u, nil
	}
	choice := out.Choices[0]
	return answer{content: choice.Message.Content, cut: choice.FinishReason == "length"}, u, nil
}

// isReasoningModel reports models that reject a temperature other than the
// default: the o-series and GPT-5.
func isReasoningModel(model string) bool {
	return focusgate.FamilyOf(model) == focusgate.FamilyReasoning
}
