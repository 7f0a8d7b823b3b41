package proxy_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/prune"
)

// The gateway's tests that need a real pipeline behind it (metrics, auth,
// holdout, the deadline, rescue) share this scripted retriever; what the
// pipeline does to a body is specified in package pipeline.

// retriever plays the retriever model over real HTTP. Its answer is computed
// from the numbered tree it receives, as a scripted selection.
type retriever struct {
	URL string

	mu       sync.Mutex
	requests []openai.ChatCompletionRequest
}

// answerFunc scripts the retriever: given the numbered lines of the tree
// (index 0 is line 1), it returns the HTTP status and the message content.
type answerFunc func(lines []string) (status int, content string)

func newRetriever(t *testing.T, answer answerFunc) *retriever {
	t.Helper()
	rt := &retriever{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req openai.ChatCompletionRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rt.mu.Lock()
		rt.requests = append(rt.requests, req)
		rt.mu.Unlock()
		status, content := answer(numberedLines(req.Messages[len(req.Messages)-1].Content))
		if status == 0 {
			<-r.Context().Done() // hang until the caller gives up
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

func (rt *retriever) calls() []openai.ChatCompletionRequest {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]openai.ChatCompletionRequest(nil), rt.requests...)
}

var numbered = regexp.MustCompile(`(?m)^ *(\d+) (.*)$`)

// numberedLines reads the numbered tree back out of a retriever prompt.
func numberedLines(prompt string) []string {
	var lines []string
	for _, m := range numbered.FindAllStringSubmatch(prompt, -1) {
		if n, _ := strconv.Atoi(m[1]); n == len(lines)+1 {
			lines = append(lines, m[2])
		}
	}
	return lines
}

// keep answers with the lines that contain any of the needles.
func keep(needles ...string) answerFunc {
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

// pruningGateway is focusgate with real detection, pruning and an in-process
// cache, between a recording upstream and a scripted retriever.
func pruningGateway(t *testing.T, rt *retriever, configure ...func(*gatewayOptions)) *gateway {
	t.Helper()
	pruner := prune.New(prune.Config{RetrieverModel: "gpt-4.1-mini", MinTokens: 1000, UseHistory: true},
		prune.NewOpenAIRetriever(prune.RetrieverConfig{BaseURL: rt.URL, Model: "gpt-4.1-mini", Timeout: time.Minute}),
		cache.New(cache.NewMemory(1<<20, time.Hour), nil))
	return newGateway(t, nil, append([]func(*gatewayOptions){func(o *gatewayOptions) {
		o.Pruner, o.Mode, o.Variant, o.RetrieverModel = pruner, focusgate.Remove, focusgate.LineVariant, "gpt-4.1-mini"
	}}, configure...)...)
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const laptopRequest = "../testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json"
