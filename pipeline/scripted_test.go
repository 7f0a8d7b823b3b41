package pipeline_test

import (
	"context"
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
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/pipeline"
	"github.com/focusgate/focusgate/prune"
)

// retriever plays the retriever model over real HTTP, behind the real
// OpenAI retriever client. Its answer is computed from the numbered tree it
// receives, as a scripted selection.
type retriever struct {
	URL string

	mu       sync.Mutex
	requests []openai.ChatCompletionRequest
}

// answerFunc scripts the retriever: given the numbered lines of the tree
// (index 0 is line 1), it returns the HTTP status and the message content.
// Status 0 hangs until the caller gives up.
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

func reply(status int, content string) answerFunc {
	return func([]string) (int, string) { return status, content }
}

// retrieverPruner is the real pruner, asking rt as the retriever model
// named model, over store. The deadline is one no busy machine reaches
// unless a test is about it.
func retrieverPruner(rt *retriever, model string, store cache.Store, configure ...func(*prune.Config, *prune.RetrieverConfig)) *prune.Pruner {
	cfg := prune.Config{RetrieverModel: model, MinTokens: 1000, UseHistory: true}
	rcfg := prune.RetrieverConfig{BaseURL: rt.URL, Model: model, Timeout: time.Minute}
	for _, c := range configure {
		c(&cfg, &rcfg)
	}
	return prune.New(cfg, prune.NewOpenAIRetriever(rcfg), cache.New(store, nil))
}

// retrieverPipeline is the gateway's pipeline in remove mode with the line
// prompt, over pr. It has no deadline of its own unless a test sets one: a
// busy machine must not turn a prune into a timeout.
func retrieverPipeline(pr pipeline.Pruner, configure ...func(*pipeline.Options)) *pipeline.Pipeline {
	opts := pipeline.Options{
		Pruner: pr, Mode: focusgate.Remove, Variant: focusgate.LineVariant,
		RetrieverModel: "gpt-4.1-mini", Budget: time.Hour,
	}
	for _, c := range configure {
		c(&opts)
	}
	return pipeline.New(opts)
}

// pruningPipeline is a pipeline with real detection, pruning and an
// in-process cache, in front of the scripted retriever rt.
func pruningPipeline(rt *retriever, configure ...func(*pipeline.Options)) *pipeline.Pipeline {
	return retrieverPipeline(retrieverPruner(rt, "gpt-4.1-mini", cache.NewMemory(16<<20, time.Hour)), configure...)
}

// rewrite runs one request through p.
func rewrite(p *pipeline.Pipeline, req pipeline.Request) ([]byte, pipeline.Outcome) {
	return p.Rewrite(context.Background(), req)
}

// chat is a chat-completions request with body.
func chat(body []byte) pipeline.Request {
	return pipeline.Request{API: focusgate.Chat, Body: body}
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const laptopRequest = "../testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json"

// onlyObservation returns the tree span focusgate detects in body.
func onlyObservation(t *testing.T, body []byte) detect.Observation {
	t.Helper()
	obs, err := detect.Find(body, focusgate.Chat, detect.Options{})
	if err != nil || len(obs) != 1 {
		t.Fatalf("want one observation in the request, got %d (%v)", len(obs), err)
	}
	return obs[0]
}

// treeSent decodes the tree text forwarded at the span where the original
// tree started.
func treeSent(t *testing.T, sent []byte, obs detect.Observation, origLen int) string {
	t.Helper()
	end := len(sent) - (origLen - obs.RawEnd)
	var s string
	if err := json.Unmarshal([]byte(`"`+string(sent[obs.RawStart:end])+`"`), &s); err != nil {
		t.Fatalf("the pruned span is not JSON string content: %v", err)
	}
	return s
}

// genericAgentBody wraps a tree in a GenericAgent-style chat request, the user
// message as a list of text parts as AgentLab sends it.
func genericAgentBody(t *testing.T, goal, tree string) []byte {
	t.Helper()
	parts := []map[string]string{
		{"type": "text", "text": "# Instructions\nReview the current state of the page.\n\n## Goal:\n"},
		{"type": "text", "text": goal},
		{"type": "text", "text": "\n# Observation of current step:\n\n## AXTree:\nNote: [bid] is the unique alpha-numeric identifier at the beginning of lines for each element in the AXTree. Always use bid to refer to elements in your actions.\n\n" +
			tree + "\n\n## Focused element:\nbid='1845'\n"},
		{"type": "text", "text": "\n# Action space:\nclick(bid: str)\n"},
	}
	b, err := json.Marshal(map[string]any{
		"model":    "gpt-4.1-2025-04-14",
		"messages": []map[string]any{{"role": "system", "content": "You are a web agent."}, {"role": "user", "content": parts}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// waitUntil polls cond, which reads state outside the test's control (the
// Redis store's background probe), until it holds or a deadline passes.
func waitUntil(t *testing.T, cond func() bool, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}
