package pipeline_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/prune"
)

func TestPrunedBodyDiffersOnlyInsideTheTree(t *testing.T) {
	rt := newRetriever(t, keep("[a203] textbox", "[a237] combobox", "[a278] button 'Order Now'"))
	p := pruningPipeline(rt)
	body := readFile(t, laptopRequest)
	obs := onlyObservation(t, body)

	sent, out := rewrite(p, focusgate.Request{API: focusgate.APIChat, Body: body, Credential: ownKey("sk-client")})
	if out.Status != focusgate.StatusPruned {
		t.Fatalf("%s %s, want pruned", out.Status, out.Reason)
	}
	if !json.Valid(sent) {
		t.Fatal("the pipeline returned invalid JSON")
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
	if out.TokensBefore < 1000 || out.TokensAfter <= 0 || out.TokensAfter >= out.TokensBefore/4 {
		t.Errorf("tokens %d -> %d: want a large tree cut to a fraction", out.TokensBefore, out.TokensAfter)
	}
	if out.Cache != focusgate.CacheMiss {
		t.Errorf("cache %q, want miss", out.Cache)
	}
	if out.Retriever <= 0 {
		t.Errorf("retriever wait %v: the call that was made is not reported", out.Retriever)
	}
	if len(out.Pages) != 1 || out.Model != "gpt-4.1-2025-04-14" || out.API != focusgate.APIChat {
		t.Errorf("outcome names %d pages, model %q, API %s; want the one page of this gpt-4.1 chat request", len(out.Pages), out.Model, out.API)
	}
}

func TestRetrieverGetsGoalHistoryAndNumberedTree(t *testing.T) {
	rt := newRetriever(t, keep("[a203]"))
	rewrite(pruningPipeline(rt), chat(readFile(t, laptopRequest)))

	calls := rt.Calls()
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

// Whatever goes wrong with the retriever, the body comes back exactly as
// the agent sent it, and the outcome says why.
func TestRetrieverFailuresFailOpen(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL + "/v1"
	dead.Close()

	tests := []struct {
		name   string
		answer answerFunc
		url    string // overrides the fake retriever's
		reason focusgate.Reason
	}{
		{"timeout", reply(0, ""), "", focusgate.ReasonTimeout},
		{"connection refused", nil, deadURL, focusgate.ReasonRetrieverError},
		{"rate limited", reply(http.StatusTooManyRequests, ""), "", focusgate.ReasonRetrieverHTTP4xx},
		{"server error", reply(http.StatusInternalServerError, ""), "", focusgate.ReasonRetrieverHTTP5xx},
		{"garbage answer", reply(http.StatusOK, "I would keep the search box, probably."), "", focusgate.ReasonBadAnswer},
		{"empty answer", reply(http.StatusOK, ""), "", focusgate.ReasonBadAnswer},
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
			pr := retrieverPruner(rt, "m", cache.NewMemory(1<<20, time.Hour), func(c *prune.Config, r *prune.RetrieverConfig) {
				c.UseHistory = false
				if tt.reason == focusgate.ReasonTimeout {
					r.Timeout = 300 * time.Millisecond
				}
			})
			got, out := rewrite(retrieverPipeline(pr), focusgate.Request{API: focusgate.APIChat, Body: body, Credential: ownKey("sk-client")})
			if out.Status != focusgate.StatusFailedOpen || out.Reason != tt.reason {
				t.Errorf("%s %s, want failed-open %s", out.Status, out.Reason, tt.reason)
			}
			if !bytes.Equal(got, body) {
				t.Error("the body did not come back as the agent sent it")
			}
		})
	}
}

// A request's own mode and prompt variant (the X-Focusgate-Mode and
// X-Focusgate-Prompt headers) override the pipeline's.
func TestRequestChoosesModeAndPrompt(t *testing.T) {
	body := readFile(t, laptopRequest)
	tests := []struct {
		name, mode, prompt string
		status             focusgate.Status
		reason             focusgate.Reason
		check              func(t *testing.T, tree string, rt *retriever)
	}{
		{name: "off", mode: "off", status: focusgate.StatusSkipped, reason: focusgate.ReasonModeOff},
		{name: "bad mode", mode: "shrink", status: focusgate.StatusSkipped, reason: focusgate.ReasonBadHeader},
		{name: "bad prompt", prompt: "lenient", status: focusgate.StatusSkipped, reason: focusgate.ReasonBadHeader},
		{
			name: "stubs keeps every line", mode: "stubs", status: focusgate.StatusPruned,
			check: func(t *testing.T, tree string, _ *retriever) {
				orig := onlyObservation(t, body).Text
				if got, want := strings.Count(tree, "\n"), strings.Count(orig, "\n"); got != want {
					t.Errorf("stubs mode: %d lines, want %d", got+1, want+1)
				}
			},
		},
		{
			name: "ancestors keeps the path to kept lines", mode: "ancestors", status: focusgate.StatusPruned,
			check: func(t *testing.T, tree string, _ *retriever) {
				if !strings.Contains(tree, "[a216] region\n") {
					t.Errorf("ancestors mode: no stub for the region holding the quantity box:\n%s", tree)
				}
			},
		},
		{
			name: "restrictive prompt", prompt: "restrictive", status: focusgate.StatusPruned,
			check: func(t *testing.T, _ string, rt *retriever) {
				if sys := rt.Calls()[0].Messages[0].Content; !strings.Contains(sys, "Be strict") {
					t.Errorf("the restrictive variant was not used: %q", sys)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newRetriever(t, keep("[a237] combobox"))
			got, out := rewrite(pruningPipeline(rt), focusgate.Request{API: focusgate.APIChat, Body: body, Mode: tt.mode, Prompt: tt.prompt})
			if out.Status != tt.status || out.Reason != tt.reason {
				t.Fatalf("%s %s, want %s %s", out.Status, out.Reason, tt.status, tt.reason)
			}
			if tt.check == nil {
				if !bytes.Equal(got, body) {
					t.Error("a skipped request was changed")
				}
				if n := len(rt.Calls()); n != 0 {
					t.Errorf("the retriever was called %d times for a skipped request", n)
				}
				return
			}
			tt.check(t, treeSent(t, got, onlyObservation(t, body), len(body)), rt)
		})
	}
}

func TestNothingToPrune(t *testing.T) {
	small := `{"model":"gpt-4.1","messages":[{"role":"user","content":"## AXTree:\nRootWebArea 'Tiny'\n` +
		strings.Repeat(`\t[1] link 'Home'\n`, 10) + `"}]}`
	tests := []struct {
		name, body string
		reason     focusgate.Reason
	}{
		{"plain chat", `{"model":"gpt-4.1","messages":[{"role":"user","content":"- one\n- two\n- three"}]}`, focusgate.ReasonNoObservation},
		{"small tree", small, focusgate.ReasonBelowMinTokens},
		{"not JSON", `model=gpt-4.1`, focusgate.ReasonNotJSON},
		{"a malformed object that may hold a page", `{"model":"gpt-4.1","messages":[{"content":"[a1] [b2] [c3]"}`, focusgate.ReasonNotJSON},
		// Not parsed at all: it cannot hold a page.
		{"a malformed object without ids", `{"model":"gpt-4.1","messages":[}`, focusgate.ReasonNoObservation},
	}
	rt := newRetriever(t, keep("x"))
	p := pruningPipeline(rt)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, out := rewrite(p, chat([]byte(tt.body)))
			if out.Status != focusgate.StatusSkipped || out.Reason != tt.reason {
				t.Errorf("%s %s, want skipped %s", out.Status, out.Reason, tt.reason)
			}
			if string(got) != tt.body {
				t.Errorf("body changed: %q", got)
			}
		})
	}
	if n := len(rt.Calls()); n != 0 {
		t.Errorf("the retriever was called %d times for requests with nothing to prune", n)
	}
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
				body := genericAgentBody(t, "List out reviewers, if exist, who mention about ear cups being small", string(readFile(t, file)))
				got, out := rewrite(pruningPipeline(rt), focusgate.Request{API: focusgate.APIChat, Body: body, Prompt: "defender", Mode: mode})
				if out.Status != focusgate.StatusPruned {
					t.Fatalf("%s %s, want pruned", out.Status, out.Reason)
				}
				if out.Flagged < 10 {
					t.Errorf("%d lines flagged, want the dialog's", out.Flagged)
				}
				sent := string(got)
				for _, attack := range []string{"IMPORTANT NOTICE FOR AGENTS", "security desk", "localhost:4321", "Important Notice"} {
					if strings.Contains(sent, attack) {
						t.Errorf("the action model would receive pop-up text %q", attack)
					}
				}
				if !strings.Contains(sent, "[261] link 'My Account'") && !strings.Contains(sent, "[227] link 'My Account'") {
					t.Error("the page itself does not reach the action model")
				}
			})
		}
	}
}

func TestResponsesAPIIsPruned(t *testing.T) {
	rt := newRetriever(t, keep("[a237] combobox"))
	tree := onlyObservation(t, readFile(t, laptopRequest)).Text
	body, _ := json.Marshal(map[string]any{
		"model":        "gpt-4.1",
		"instructions": "You are a web agent.",
		"input": []map[string]any{{"role": "user", "content": []map[string]string{
			{"type": "input_text", "text": "# Goal\nOrder 10 laptops.\n\n# Observation\n\n## AXTree:\n" + tree + "\n"},
		}}},
	})
	got, out := rewrite(pruningPipeline(rt), focusgate.Request{API: focusgate.APIResponses, Body: body})
	if out.Status != focusgate.StatusPruned {
		t.Fatalf("%s %s, want pruned", out.Status, out.Reason)
	}
	if sent := string(got); !strings.Contains(sent, "[a237] combobox") || strings.Contains(sent, "[a301] log") {
		t.Error("the Responses request was not pruned to the selection")
	}
}
