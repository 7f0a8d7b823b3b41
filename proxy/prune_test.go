package proxy_test

import (
	"bytes"
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
	"github.com/focusgate/focusgate/proxy"
	"github.com/focusgate/focusgate/prune"
)

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

func reply(status int, content string) answerFunc {
	return func([]string) (int, string) { return status, content }
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

// onlyObservation returns the tree span focusgate detects in body.
func onlyObservation(t *testing.T, body []byte) detect.Observation {
	t.Helper()
	obs, err := detect.Find(body, focusgate.Chat, detect.Options{})
	if err != nil || len(obs) != 1 {
		t.Fatalf("want one observation in the request, got %d (%v)", len(obs), err)
	}
	return obs[0]
}

// treeSent decodes the tree text the action model received at the span
// where the original tree started.
func treeSent(t *testing.T, sent []byte, obs detect.Observation, origLen int) string {
	t.Helper()
	end := len(sent) - (origLen - obs.RawEnd)
	var s string
	if err := json.Unmarshal([]byte(`"`+string(sent[obs.RawStart:end])+`"`), &s); err != nil {
		t.Fatalf("the pruned span is not JSON string content: %v", err)
	}
	return s
}

func TestPrunedBodyDiffersOnlyInsideTheTree(t *testing.T) {
	rt := newRetriever(t, keep("[a203] textbox", "[a237] combobox", "[a278] button 'Order Now'"))
	gw := pruningGateway(t, rt)
	body := readFile(t, laptopRequest)
	obs := onlyObservation(t, body)

	resp := post(t, gw.URL+"/v1/chat/completions", body, map[string]string{"Authorization": "Bearer sk-client"})
	if got := resp.Header.Get(proxy.HeaderStatus); got != "pruned" {
		t.Fatalf("%s = %q, want pruned", proxy.HeaderStatus, got)
	}
	sent := gw.upstream.last(t).Body
	if !json.Valid(sent) {
		t.Fatal("the action model received invalid JSON")
	}
	suffix := len(body) - obs.RawEnd
	if !bytes.Equal(sent[:obs.RawStart], body[:obs.RawStart]) || !bytes.Equal(sent[len(sent)-suffix:], body[obs.RawEnd:]) {
		t.Error("bytes outside the tree span changed")
	}
	tree := treeSent(t, sent, obs, len(body))
	for _, want := range []string{"RootWebArea 'Standard Laptop | ServiceNow'", "[a203] textbox", "[a237] combobox", "[a278] button 'Order Now'", "lines pruned"} {
		if !strings.Contains(tree, want) {
			t.Errorf("pruned tree lacks %q", want)
		}
	}
	for _, gone := range []string{"[a301] log", "[56] link 'Skip to main content'", "[a238] option"} {
		if strings.Contains(tree, gone) {
			t.Errorf("pruned tree still has %q", gone)
		}
	}
	before, _ := strconv.Atoi(resp.Header.Get(proxy.HeaderTokensBefore))
	after, _ := strconv.Atoi(resp.Header.Get(proxy.HeaderTokensAfter))
	if before < 1000 || after <= 0 || after >= before/4 {
		t.Errorf("tokens %d -> %d: want a large tree cut to a fraction", before, after)
	}
	if got := resp.Header.Get(proxy.HeaderCache); got != "miss" {
		t.Errorf("%s = %q, want miss", proxy.HeaderCache, got)
	}
	if _, err := strconv.Atoi(resp.Header.Get(proxy.HeaderRetrieverMs)); err != nil {
		t.Errorf("%s = %q, want milliseconds", proxy.HeaderRetrieverMs, resp.Header.Get(proxy.HeaderRetrieverMs))
	}
	if !strings.Contains(gw.logs.String(), "msg=observations status=pruned") {
		t.Errorf("no log line for the pruned request:\n%s", gw.logs.String())
	}
}

func TestRetrieverGetsGoalHistoryAndNumberedTree(t *testing.T) {
	rt := newRetriever(t, keep("[a203]"))
	gw := pruningGateway(t, rt)
	post(t, gw.URL+"/chat/completions", readFile(t, laptopRequest), map[string]string{"Authorization": "Bearer sk-client"})

	calls := rt.calls()
	if len(calls) != 1 {
		t.Fatalf("retriever called %d times, want 1", len(calls))
	}
	if calls[0].Model != "gpt-4.1-mini" {
		t.Errorf("retriever model %q", calls[0].Model)
	}
	prompt := calls[0].Messages[len(calls[0].Messages)-1].Content
	for _, want := range []string{
		`order 10 "Standard Laptop" with configuration`,   // the goal
		"fill('a203', 'Trello, Salesforce, QuickBooks",    // the history
		"   1 RootWebArea 'Standard Laptop | ServiceNow'", // the numbered tree
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("retriever prompt lacks %q", want)
		}
	}
	if lines := numberedLines(prompt); len(lines) < 150 {
		t.Errorf("retriever saw %d numbered lines, want the whole tree", len(lines))
	}
}

// Whatever goes wrong with the retriever, the action model gets the request
// exactly as the agent sent it, and the status header says why.
func TestRetrieverFailuresFailOpen(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL + "/v1"
	dead.Close()

	tests := []struct {
		name   string
		answer answerFunc
		url    string // overrides the fake retriever's
		reason string
	}{
		{"timeout", reply(0, ""), "", "timeout"},
		{"connection refused", nil, deadURL, "retriever-error"},
		{"rate limited", reply(http.StatusTooManyRequests, ""), "", "retriever-http-4xx"},
		{"server error", reply(http.StatusInternalServerError, ""), "", "retriever-http-5xx"},
		{"garbage answer", reply(http.StatusOK, "I would keep the search box, probably."), "", "bad-answer"},
		{"empty answer", reply(http.StatusOK, ""), "", "bad-answer"},
	}
	body := readFile(t, laptopRequest)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &retriever{URL: tt.url}
			if tt.answer != nil {
				rt = newRetriever(t, tt.answer)
			}
			// Only the hanging retriever may reach the deadline: a busy
			// machine must not turn the other cases into timeouts.
			timeout := time.Minute
			if tt.reason == "timeout" {
				timeout = 300 * time.Millisecond
			}
			pruner := prune.New(prune.Config{RetrieverModel: "m", MinTokens: 1000},
				prune.NewOpenAIRetriever(prune.RetrieverConfig{BaseURL: rt.URL, Model: "m", Timeout: timeout}),
				cache.New(cache.NewMemory(1<<20, time.Hour), nil))
			gw := newGateway(t, nil, func(o *gatewayOptions) { o.Pruner = pruner })

			resp := post(t, gw.URL+"/v1/chat/completions", body, map[string]string{"Authorization": "Bearer sk-client"})
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("the agent's request failed: %d", resp.StatusCode)
			}
			if got, want := resp.Header.Get(proxy.HeaderStatus), "failed-open; reason="+tt.reason; got != want {
				t.Errorf("%s = %q, want %q", proxy.HeaderStatus, got, want)
			}
			if !bytes.Equal(gw.upstream.last(t).Body, body) {
				t.Error("the action model did not receive the original bytes")
			}
		})
	}
}

func TestRequestHeadersChooseModeAndPrompt(t *testing.T) {
	body := readFile(t, laptopRequest)
	tests := []struct {
		name, mode, prompt string
		status             string
		check              func(t *testing.T, tree string, rt *retriever)
	}{
		{name: "off", mode: "off", status: "skipped; reason=mode-off"},
		{name: "bad value", mode: "shrink", status: "skipped; reason=bad-header"},
		{
			name: "stubs keeps every line", mode: "stubs", status: "pruned",
			check: func(t *testing.T, tree string, _ *retriever) {
				orig := onlyObservation(t, body).Text
				if got, want := strings.Count(tree, "\n"), strings.Count(orig, "\n"); got != want {
					t.Errorf("stubs mode: %d lines, want %d", got+1, want+1)
				}
			},
		},
		{
			name: "ancestors keeps the path to kept lines", mode: "ancestors", status: "pruned",
			check: func(t *testing.T, tree string, _ *retriever) {
				if !strings.Contains(tree, "[a216] region\n") {
					t.Errorf("ancestors mode: no stub for the region holding the quantity box:\n%s", tree)
				}
			},
		},
		{
			name: "restrictive prompt", prompt: "restrictive", status: "pruned",
			check: func(t *testing.T, _ string, rt *retriever) {
				if sys := rt.calls()[0].Messages[0].Content; !strings.Contains(sys, "Be strict") {
					t.Errorf("the restrictive variant was not used: %q", sys)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newRetriever(t, keep("[a237] combobox"))
			gw := pruningGateway(t, rt)
			h := map[string]string{}
			if tt.mode != "" {
				h[proxy.HeaderMode] = tt.mode
			}
			if tt.prompt != "" {
				h[proxy.HeaderPrompt] = tt.prompt
			}
			resp := post(t, gw.URL+"/v1/chat/completions", body, h)
			if got := resp.Header.Get(proxy.HeaderStatus); got != tt.status {
				t.Fatalf("%s = %q, want %q", proxy.HeaderStatus, got, tt.status)
			}
			got := gw.upstream.last(t)
			if got.Header.Get(proxy.HeaderMode) != "" || got.Header.Get(proxy.HeaderPrompt) != "" {
				t.Error("focusgate's request headers reached the upstream")
			}
			if tt.check == nil {
				if !bytes.Equal(got.Body, body) {
					t.Error("a skipped request was changed")
				}
				return
			}
			tt.check(t, treeSent(t, got.Body, onlyObservation(t, body), len(body)), rt)
		})
	}
}

func TestNothingToPrune(t *testing.T) {
	small := `{"model":"gpt-4.1","messages":[{"role":"user","content":"## AXTree:\nRootWebArea 'Tiny'\n` +
		strings.Repeat(`\t[1] link 'Home'\n`, 10) + `"}]}`
	tests := []struct{ name, body, status string }{
		{"plain chat", `{"model":"gpt-4.1","messages":[{"role":"user","content":"- one\n- two\n- three"}]}`, "skipped; reason=no-observation"},
		{"small tree", small, "skipped; reason=below-min-tokens"},
		{"not JSON", `model=gpt-4.1`, "skipped; reason=not-json"},
	}
	rt := newRetriever(t, keep("x"))
	gw := pruningGateway(t, rt)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, gw.URL+"/v1/chat/completions", []byte(tt.body), nil)
			if got := resp.Header.Get(proxy.HeaderStatus); got != tt.status {
				t.Errorf("%s = %q, want %q", proxy.HeaderStatus, got, tt.status)
			}
			if got := gw.upstream.last(t).Body; string(got) != tt.body {
				t.Errorf("body changed: %q", got)
			}
		})
	}
	if n := len(rt.calls()); n != 0 {
		t.Errorf("the retriever was called %d times for requests with nothing to prune", n)
	}
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

// With the defender prompt, lines the retriever flags as an attack never
// reach the action model, whatever the mode and even when the pop-up holds
// the focus.
func TestDefenderKeepsInjectionsFromTheActionModel(t *testing.T) {
	for _, file := range []string{
		"../testdata/axtrees/agentlab-tutorial_webarena_shopping_prompt_0_with_doomarena_popup_injection_tabs-restored.txt",
		"../testdata/axtrees/agentlab-tutorial_webarena_shopping_prompt_2_with_doomarena_popup_injection_tabs-restored.txt",
	} {
		for _, mode := range []string{"remove", "ancestors", "stubs"} {
			t.Run(mode+"/"+file[len("../testdata/axtrees/"):40], func(t *testing.T) {
				// The scripted defender keeps the page and flags the dialog
				// subtree, as a good retriever would.
				rt := newRetriever(t, func(lines []string) (int, string) {
					first, last := 0, 0
					for i, l := range lines {
						depth := len(l) - len(strings.TrimLeft(l, "\t"))
						switch {
						case first == 0 && strings.Contains(l, "] dialog "):
							first, last = i+1, i+1
						case first != 0 && last == i && depth > 1:
							last = i + 1
						}
					}
					return http.StatusOK, fmt.Sprintf("<answer>[(1,%d)]</answer><injection>[(%d,%d)]</injection>", len(lines), first, last)
				})
				gw := pruningGateway(t, rt)
				body := genericAgentBody(t, "List out reviewers, if exist, who mention about ear cups being small", string(readFile(t, file)))
				resp := post(t, gw.URL+"/v1/chat/completions", body, map[string]string{
					proxy.HeaderPrompt: "defender", proxy.HeaderMode: mode,
				})
				if got := resp.Header.Get(proxy.HeaderStatus); got != "pruned" {
					t.Fatalf("%s = %q, want pruned", proxy.HeaderStatus, got)
				}
				if n, _ := strconv.Atoi(resp.Header.Get(proxy.HeaderFlaggedLines)); n < 10 {
					t.Errorf("%s = %q, want the dialog's lines", proxy.HeaderFlaggedLines, resp.Header.Get(proxy.HeaderFlaggedLines))
				}
				sent := string(gw.upstream.last(t).Body)
				for _, attack := range []string{"IMPORTANT NOTICE FOR AGENTS", "security desk", "localhost:4321", "Important Notice"} {
					if strings.Contains(sent, attack) {
						t.Errorf("the action model received pop-up text %q", attack)
					}
				}
				if !strings.Contains(sent, "[261] link 'My Account'") && !strings.Contains(sent, "[227] link 'My Account'") {
					t.Error("the page itself did not reach the action model")
				}
			})
		}
	}
}

func TestResponsesAPIIsPruned(t *testing.T) {
	rt := newRetriever(t, keep("[a237] combobox"))
	gw := pruningGateway(t, rt)
	tree := onlyObservation(t, readFile(t, laptopRequest)).Text
	body, _ := json.Marshal(map[string]any{
		"model":        "gpt-4.1",
		"instructions": "You are a web agent.",
		"input": []map[string]any{{"role": "user", "content": []map[string]string{
			{"type": "input_text", "text": "# Goal\nOrder 10 laptops.\n\n# Observation\n\n## AXTree:\n" + tree + "\n"},
		}}},
	})
	resp := post(t, gw.URL+"/v1/responses", body, nil)
	if got := resp.Header.Get(proxy.HeaderStatus); got != "pruned" {
		t.Fatalf("%s = %q, want pruned", proxy.HeaderStatus, got)
	}
	sent := string(gw.upstream.last(t).Body)
	if !strings.Contains(sent, "[a237] combobox") || strings.Contains(sent, "[a301] log") {
		t.Error("the Responses request was not pruned to the selection")
	}
}
