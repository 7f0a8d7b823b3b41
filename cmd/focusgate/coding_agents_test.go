package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// placeOrderRef is the line of the element the scripted model clicks, in
// Playwright MCP's syntax; its ref is the first group.
var placeOrderRef = regexp.MustCompile(`button "Place order" \[ref=(\w+)\]`)

// call is one tool call of a conversation and the output it got.
type call struct {
	name   string // MCP tools without the agent's prefix: browser_navigate
	output string
}

// conversation reads the tools a request offers and the tool calls of its
// conversation with their outputs, whatever the API.
func conversation(api string, body []byte) (tools []string, calls []call) {
	b := gjson.ParseBytes(body)
	b.Get("tools").ForEach(func(_, tl gjson.Result) bool {
		if n := tl.Get("function.name"); n.Exists() {
			tools = append(tools, n.String())
		} else {
			tools = append(tools, tl.Get("name").String())
		}
		return true
	})
	add := func(name string, args gjson.Result) {
		// Qwen Code calls a deferred MCP tool through tool_call.
		if name == "tool_call" {
			name = args.Get("name").String()
		}
		if i := strings.Index(name, "browser_"); i > 0 {
			name = name[i:]
		}
		calls = append(calls, call{name: name})
	}
	setOutput := func(out string) {
		if len(calls) > 0 {
			calls[len(calls)-1].output = out
		}
	}
	switch api {
	case "chat":
		b.Get("messages").ForEach(func(_, msg gjson.Result) bool {
			msg.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
				add(c.Get("function.name").String(), gjson.Parse(c.Get("function.arguments").String()))
				return true
			})
			if msg.Get("role").String() == "tool" {
				setOutput(text(msg.Get("content")))
			}
			return true
		})
	case "responses":
		b.Get("input").ForEach(func(_, it gjson.Result) bool {
			switch it.Get("type").String() {
			case "function_call":
				add(it.Get("name").String(), gjson.Parse(it.Get("arguments").String()))
			case "function_call_output":
				setOutput(text(it.Get("output")))
			}
			return true
		})
	case "messages":
		b.Get("messages").ForEach(func(_, msg gjson.Result) bool {
			msg.Get("content").ForEach(func(_, block gjson.Result) bool {
				switch block.Get("type").String() {
				case "tool_use":
					add(block.Get("name").String(), block.Get("input"))
				case "tool_result":
					setOutput(text(block.Get("content")))
				}
				return true
			})
			return true
		})
	}
	return tools, calls
}

// text is a content value as text: a string, or the text of its parts.
func text(v gjson.Result) string {
	if v.Type == gjson.String {
		return v.String()
	}
	var parts []string
	v.ForEach(func(_, p gjson.Result) bool {
		parts = append(parts, p.Get("text").String())
		return true
	})
	return strings.Join(parts, "\n")
}

// unescape undoes the JSON escaping an agent may have wrapped a tool output
// in (Cline sends the MCP result as JSON), so the model reads quotes.
func unescape(s string) string {
	for range 2 {
		s = strings.NewReplacer(`\\`, `\`, `\"`, `"`, `\n`, "\n").Replace(s)
	}
	return s
}

var (
	// savedFile is where an agent says it saved a tool output too big to
	// show: "Saved to: PATH" (Copilot CLI), "Full output saved to: PATH"
	// (Qwen Code), "...saved to: PATH" (opencode).
	savedFile = regexp.MustCompile(`(?i)saved to:?\s+(/[^\s"'<>]+)`)
)

// newRefRetriever plays the retriever (OpenAI chat completions) for every
// API: it keeps line 1 and the target's line of the numbered page.
func newRefRetriever(t *testing.T) *httptest.Server {
	t.Helper()
	r := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(req.Body, 64<<20))
		msgs := gjson.GetBytes(body, "messages").Array()
		if len(msgs) == 0 {
			http.Error(w, "bad retriever request", http.StatusBadRequest)
			return
		}
		ranges := []string{"(1,1)"}
		for _, line := range strings.Split(msgs[len(msgs)-1].Get("content").String(), "\n") {
			if sm := numberedLine.FindStringSubmatch(line); sm != nil && placeOrderRef.MatchString(line) {
				ranges = append(ranges, "("+sm[1]+","+sm[1]+")")
			}
		}
		answer, _ := json.Marshal("<answer>[" + strings.Join(ranges, ", ") + "]</answer>")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"r","object":"chat.completion","created":1,"model":"gpt-4.1-mini","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`, answer)
	}))
	t.Cleanup(r.Close)
	return r
}

// newestOutputHasPage reports whether the newest tool output of a request
// holds page lines (or a chunk of them).
func newestOutputHasPage(api string, body []byte) bool {
	_, calls := conversation(api, body)
	if len(calls) == 0 {
		return false
	}
	out := unescape(calls[len(calls)-1].output)
	return !isPreview(out) && strings.Count(out, "[ref=") >= 5
}

// isPreview reports whether a tool output is an agent's short preview of
// an output it saved to a file, which may stay as it is.
func isPreview(out string) bool {
	return len(out) < 4096 && savedFile.MatchString(out)
}

// codingAgentCaptures are the folders under testdata/agents that hold what
// the coding agents sent, as TestCodingAgentsThroughTheGateway captured it:
// <api>-<small|big>/NN-<api>[-stream].json, each request's newest tool output
// holding the page or a chunk of it.
var codingAgentCaptures = []string{"opencode", "copilot", "qwen-code", "cline"}

// The coding agents' captured requests, replayed through the gateway: each
// request's newest tool output holds the page, whole or a chunk of it, in the
// agent's own wrapper (opencode's numbered read, Copilot's view, Qwen Code's
// read_file ranges, Cline's escaped and middle-cut JSON). It must reach the
// model pruned to a few element lines, the target's line kept where the agent
// had it, every line it keeps one of the agent's own, and every byte outside
// the tool outputs as the agent sent it.
func TestCodingAgentCapturesArePruned(t *testing.T) {
	for _, agent := range codingAgentCaptures {
		dirs, _ := filepath.Glob(filepath.Join("../../testdata/agents", agent, "*"))
		if len(dirs) == 0 {
			t.Fatalf("no captured requests under testdata/agents/%s", agent)
		}
		for _, dir := range dirs {
			t.Run(agent+"/"+filepath.Base(dir), func(t *testing.T) {
				api, _, _ := strings.Cut(filepath.Base(dir), "-")
				replayCodingAgent(t, dir, api)
			})
		}
	}
}

func replayCodingAgent(t *testing.T, dir, api string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) == 0 {
		t.Fatal("no requests")
	}
	sort.Strings(files)
	upstream := newRecordingUpstream(t)
	retriever := newRefRetriever(t)
	gw := startGateway(t, map[string]string{
		"FOCUSGATE_UPSTREAM_URL":  upstream.URL + "/v1",
		"FOCUSGATE_ANTHROPIC_URL": upstream.URL,
		"FOCUSGATE_RETRIEVER_URL": retriever.URL + "/v1",
		"FOCUSGATE_MIN_TOKENS":    "300",
	})
	path := map[string]string{"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}[api]
	for _, f := range files {
		name := filepath.Base(f)
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(gw.URL+path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sent := upstream.next(t)
		status := resp.Header.Get("X-Focusgate-Status")
		if !newestOutputHasPage(api, body) {
			t.Errorf("%s: the newest tool output holds no page: not a capture this test can use", name)
			continue
		}
		if a, b := blankToolOutputs(api, body), blankToolOutputs(api, sent); !bytes.Equal(a, b) {
			t.Errorf("%s: bytes outside the tool outputs changed", name)
		}
		_, calls := conversation(api, body)
		_, sentCalls := conversation(api, sent)
		orig, got := unescape(calls[len(calls)-1].output), unescape(sentCalls[len(sentCalls)-1].output)
		before, after := strings.Count(orig, "[ref="), strings.Count(got, "[ref=")
		t.Logf("%s: %s; element refs in the newest output %d -> %d", name, status, before, after)
		if !strings.HasPrefix(status, "pruned") || after > 10 {
			t.Errorf("%s: X-Focusgate-Status %q, the newest output reached the model with %d of its %d element refs: want it pruned to a few",
				name, status, after, before)
			continue
		}
		if placeOrderRef.MatchString(orig) && !placeOrderRef.MatchString(got) {
			t.Errorf("%s: the target's line was pruned away", name)
		}
		for _, line := range strings.Split(got, "\n") {
			if !strings.Contains(orig, line) && !strings.Contains(line, "lines pruned") {
				t.Errorf("%s: the pruned output has a line the agent did not send: %q", name, line)
				break
			}
		}
	}
}

// blankToolOutputs returns body with every tool output's value replaced by
// an empty string, so that two bodies can be compared outside them.
func blankToolOutputs(api string, body []byte) []byte {
	var spans []gjson.Result
	b := gjson.ParseBytes(body)
	switch api {
	case "chat":
		spans = b.Get(`messages.#(role=="tool")#.content`).Array()
	case "responses":
		spans = b.Get(`input.#(type=="function_call_output")#.output`).Array()
	case "messages":
		b.Get("messages").ForEach(func(_, m gjson.Result) bool {
			m.Get("content").ForEach(func(_, block gjson.Result) bool {
				if block.Get("type").String() == "tool_result" {
					spans = append(spans, block.Get("content"))
				}
				return true
			})
			return true
		})
	}
	out := append([]byte(nil), body...)
	for i := len(spans) - 1; i >= 0; i-- {
		s := spans[i]
		if s.Index == 0 {
			continue
		}
		out = append(out[:s.Index], append([]byte(`""`), out[s.Index+len(s.Raw):]...)...)
	}
	return out
}
