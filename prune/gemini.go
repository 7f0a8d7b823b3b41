package prune

import (
	"cmp"
	"context"
	"strings"

	"github.com/focusgate/focusgate"
)

// defaultGeminiMaxTokens is sent when no output cap is configured, so that
// a thinking model's reasoning stays bounded.
const defaultGeminiMaxTokens = 4096

type geminiPart struct {
	Text    string `json:"text"`
	Thought bool   `json:"thought,omitempty"`
}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

type geminiRequest struct {
	SystemInstruction geminiContent   `json:"systemInstruction"`
	Contents          []geminiContent `json:"contents"`
	GenerationConfig  struct {
		Temperature     float64 `json:"temperature"`
		MaxOutputTokens int     `json:"maxOutputTokens"`
	} `json:"generationConfig"`
}

type geminiResponse struct {
	Candidates []struct {
		Content      geminiContent `json:"content"`
		FinishReason string        `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata struct {
		PromptTokenCount     int `json:"promptTokenCount"`
		CandidatesTokenCount int `json:"candidatesTokenCount"`
		ThoughtsTokenCount   int `json:"thoughtsTokenCount"`
	} `json:"usageMetadata"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	} `json:"error"`
}

// geminiCall asks Gemini through generateContent: on the Gemini API or on
// Vertex AI, whose paths name the model.
func geminiCall(ctx context.Context, c *client, x exchange, system string, turns []turn) (ans answer, usage focusgate.RetrieverUsage, err error) {
	ctx, span := startChat(ctx, "gemini", c.cfg.Model)
	defer func() { endChat(span, usage, err) }()
	var req geminiRequest
	req.SystemInstruction.Parts = []geminiPart{{Text: system}}
	req.GenerationConfig.MaxOutputTokens = cmp.Or(c.cfg.MaxTokens, defaultGeminiMaxTokens)
	for _, t := range turns {
		role := "user"
		if t.assistant {
			role = "model"
		}
		req.Contents = append(req.Contents, geminiContent{Role: role, Parts: []geminiPart{{Text: t.content}}})
	}
	var out geminiResponse
	err = postCall(ctx, c, x, nil, req, &out, func() string {
		if out.Error == nil {
			return ""
		}
		return out.Error.Status + ": " + out.Error.Message
	})
	if err != nil {
		return answer{}, focusgate.RetrieverUsage{}, err
	}
	u := focusgate.RetrieverUsage{
		PromptTokens:     out.UsageMetadata.PromptTokenCount,
		CompletionTokens: out.UsageMetadata.CandidatesTokenCount + out.UsageMetadata.ThoughtsTokenCount,
	}
	if len(out.Candidates) == 0 {
		// A prompt blocked by safety filters has no candidate: an answer
		// that names no line, which ask treats as such.
		return answer{}, u, nil
	}
	var text strings.Builder
	for _, p := range out.Candidates[0].Content.Parts {
		if !p.Thought {
			text.WriteString(p.Text)
		}
	}
	return answer{content: text.String(), cut: out.Candidates[0].FinishReason == "MAX_TOKENS"}, u, nil
}
