package prune

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/focusgate/focusgate"
)

var (
	_ Retriever = (*GeminiRetriever)(nil)
	_ completer = (*GeminiRetriever)(nil)
)

// defaultGeminiMaxTokens is sent when no output cap is configured, so that
// a thinking model's reasoning stays bounded.
const defaultGeminiMaxTokens = 4096

// GeminiRetriever asks a Gemini model, through the Gemini API's
// generateContent, which lines of a tree matter: the retriever of a team
// that has only a Gemini key. Prompts, answers, the re-ask and the deadline
// are the OpenAIRetriever's. It is safe for concurrent use.
type GeminiRetriever struct {
	cfg RetrieverConfig
	// base is the API's base with its version: https://host/v1beta.
	base string
}

// NewGeminiRetriever returns a retriever for cfg; cfg.BaseURL is the Gemini
// API's base, as GOOGLE_GEMINI_BASE_URL is given
// (https://generativelanguage.googleapis.com), with or without a version.
func NewGeminiRetriever(cfg RetrieverConfig) *GeminiRetriever {
	cfg.HTTPClient = cappedClient(cfg.HTTPClient)
	base := strings.TrimSuffix(cfg.BaseURL, "/")
	if !strings.HasSuffix(base, "/v1beta") && !strings.HasSuffix(base, "/v1") {
		base += "/v1beta"
	}
	return &GeminiRetriever{cfg: cfg, base: base}
}

// Select asks the retriever for the lines that matter to q (see ask).
func (r *GeminiRetriever) Select(ctx context.Context, q Query) (Selection, error) {
	return ask(ctx, r, r.cfg.Timeout, cmp.Or(r.cfg.APIKey, q.APIKey), q)
}

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

func (r *GeminiRetriever) complete(ctx context.Context, key, system string, turns []turn) (ans answer, usage focusgate.RetrieverUsage, err error) {
	ctx, span := startChat(ctx, "gemini", r.cfg.Model)
	defer func() { endChat(span, usage, err) }()
	var req geminiRequest
	req.SystemInstruction.Parts = []geminiPart{{Text: system}}
	req.GenerationConfig.MaxOutputTokens = cmp.Or(r.cfg.MaxTokens, defaultGeminiMaxTokens)
	for _, t := range turns {
		role := "user"
		if t.assistant {
			role = "model"
		}
		req.Contents = append(req.Contents, geminiContent{Role: role, Parts: []geminiPart{{Text: t.content}}})
	}
	body, err := json.Marshal(req)
	if err != nil {
		return answer{}, focusgate.RetrieverUsage{}, fmt.Errorf("prune: retriever request: %w", err)
	}
	endpoint := r.base + "/models/" + url.PathEscape(strings.TrimPrefix(r.cfg.Model, "models/")) + ":generateContent"
	header := http.Header{}
	if strings.HasPrefix(key, "ya29.") {
		// A Google OAuth access token (Vertex AI's credential) is a
		// bearer token, not an API key.
		header.Set("Authorization", "Bearer "+key)
	} else if key != "" {
		header.Set("X-Goog-Api-Key", key)
	}
	var out geminiResponse
	err = postJSON(ctx, r.cfg.HTTPClient, endpoint, header, body, &out, func() string {
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
