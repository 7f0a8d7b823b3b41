// Package retrievertest plays the retriever model for tests, over real HTTP,
// speaking OpenAI's chat completions as the retriever client expects. Its
// answer is computed from the numbered tree it receives, as a scripted
// selection, so that a test says which lines a retriever would keep.
package retrievertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// Retriever is a scripted retriever model at URL (an OpenAI base URL,
// ending in /v1), stopped when its test ends.
type Retriever struct {
	URL string

	mu       sync.Mutex
	requests []openai.ChatCompletionRequest
}

// Answer scripts the retriever: given the numbered lines of the tree (index
// 0 is line 1), it returns the HTTP status and the message content. Status 0
// hangs until the caller gives up.
type Answer func(lines []string) (status int, content string)

// New starts a retriever that answers with answer.
func New(t testing.TB, answer Answer) *Retriever {
	t.Helper()
	rt := &Retriever{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req openai.ChatCompletionRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "not a chat completion request", http.StatusBadRequest)
			return
		}
		rt.mu.Lock()
		rt.requests = append(rt.requests, req)
		rt.mu.Unlock()
		status, content := answer(NumberedLines(req.Messages[len(req.Messages)-1].Content))
		if status == 0 {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status != http.StatusOK {
			io.WriteString(w, `{"error":{"message":"scripted failure","type":"server_error"}}`)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{
			"id": "r1", "object": "chat.completion", "created": 1, "model": req.Model,
			"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
				"message": map[string]string{"role": "assistant", "content": content}}},
			"usage": map[string]int{"prompt_tokens": 3000, "completion_tokens": 80, "total_tokens": 3080},
		})
	}))
	t.Cleanup(srv.Close)
	rt.URL = srv.URL + "/v1"
	return rt
}

// Calls returns the requests the retriever received, in order.
func (rt *Retriever) Calls() []openai.ChatCompletionRequest {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]openai.ChatCompletionRequest(nil), rt.requests...)
}

var numbered = regexp.MustCompile(`(?m)^ *(\d+) (.*)$`)

// NumberedLines reads the numbered tree back out of a retriever prompt.
func NumberedLines(prompt string) []string {
	var lines []string
	for _, m := range numbered.FindAllStringSubmatch(prompt, -1) {
		if n, _ := strconv.Atoi(m[1]); n == len(lines)+1 {
			lines = append(lines, m[2])
		}
	}
	return lines
}

// Keep answers with the lines that contain any of the needles.
func Keep(needles ...string) Answer {
	return func(lines []string) (int, string) {
		var ranges []string
		for i, l := range lines {
			for _, n := range needles {
				if strings.Contains(l, n) {
					ranges = append(ranges, fmt.Sprintf("(%d,%d)", i+1, i+1))
					break
				}
			}
		}
		return http.StatusOK, "<think>scripted</think><answer>[" + strings.Join(ranges, ", ") + "]</answer>"
	}
}

// Reply answers every call with status and content.
func Reply(status int, content string) Answer {
	return func([]string) (int, string) { return status, content }
}
