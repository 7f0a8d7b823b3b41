package pipeline_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/internal/retrievertest"
	"github.com/focusgate/focusgate/pipeline"
	"github.com/focusgate/focusgate/prune"
)

// The scripted retriever model the tests ask (see internal/retrievertest).
type (
	retriever  = retrievertest.Retriever
	answerFunc = retrievertest.Answer
)

var (
	newRetriever  = retrievertest.New
	numberedLines = retrievertest.NumberedLines
	keep          = retrievertest.Keep
	reply         = retrievertest.Reply
)

// retrieverPruner is the real pruner, asking rt as the retriever model
// named model, over store. The deadline is one no busy machine reaches
// unless a test is about it.
func retrieverPruner(rt *retriever, model string, store cache.Store, configure ...func(*prune.Config, *prune.RetrieverConfig)) *prune.Pruner {
	cfg := prune.Config{RetrieverModel: model, MinTokens: 1000, UseHistory: true}
	rcfg := prune.RetrieverConfig{Speaks: focusgate.APIChat, BaseURL: rt.URL, Model: model, Timeout: time.Minute}
	for _, c := range configure {
		c(&cfg, &rcfg)
	}
	r, err := prune.NewRetriever(rcfg)
	if err != nil {
		panic(err)
	}
	return prune.New(cfg, r, cache.New(store, nil))
}

// ownKey is an OpenAI client's own key.
func ownKey(key string) focusgate.ClientCredential {
	return focusgate.ClientCredential{Place: focusgate.OpenAIProvider.Credentials[0], Value: key}
}

// retrieverPipeline is the gateway's pipeline in remove mode with the line
// prompt, over pr. It has no deadline of its own unless a test sets one: a
// busy machine must not turn a prune into a timeout.
func retrieverPipeline(pr pipeline.Pruner, configure ...func(*pipeline.Options)) *pipeline.Pipeline {
	opts := pipeline.Options{
		Pruner: pr, Mode: focusgate.ModeRemove, Variant: focusgate.VariantLine,
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
func rewrite(p *pipeline.Pipeline, req focusgate.Request) ([]byte, focusgate.Outcome) {
	return p.Rewrite(context.Background(), req)
}

// chat is a chat-completions request with body.
func chat(body []byte) focusgate.Request {
	return focusgate.Request{API: focusgate.APIChat, Body: body}
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
	obs, err := detect.Find(body, focusgate.APIChat, detect.Options{})
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
