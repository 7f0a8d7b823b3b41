//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// piFullOutput is pi's note under a bash output it cut to its last 50 KB.
var piFullOutput = regexp.MustCompile(`\[Showing lines \d+-\d+ of \d+[^\]]*\. Full output: (\S+)\]`)

// scriptedPi plays the model API of pi's provider (chat completions or
// Anthropic Messages) for a real pi run through the gateway: the action
// model, which drives the agent-browser CLI through pi's bash tool (open, a
// snapshot of the interactive elements, a click on the ref it READ in the
// output it was sent), and the retriever the gateway asks, which keeps the
// root and the target's line. On a page whose snapshot pi cuts, the model
// first reads the start of the saved full output back with pi's read tool.
type scriptedPi struct {
	*httptest.Server
	page    string
	cli     string // agent-browser's command line prefix
	target  *regexp.Regexp
	mu      sync.Mutex
	action  [][]byte // the action model's requests as they arrived
	clicked string
	lost    bool
	chunks  []int // element refs in the chunk of the saved output, as the model got it
	result  string
}

func newScriptedPi(t *testing.T, page, cli string, target *regexp.Regexp) *scriptedPi {
	t.Helper()
	m := &scriptedPi{page: page, cli: cli, target: target}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		retriever := strings.Contains(gjson.GetBytes(body, "messages.0.content").String()+gjson.GetBytes(body, "system").String(), "You work in front of a web agent")
		switch {
		case r.URL.Path == "/v1/chat/completions" && retriever:
			(&scriptedCodex{target: target}).retrieve(w, body)
		case r.URL.Path == "/v1/messages" && retriever:
			(&scriptedClaude{target: target}).retrieve(w, body)
		case r.URL.Path == "/v1/chat/completions", r.URL.Path == "/v1/messages":
			m.mu.Lock()
			m.action = append(m.action, body)
			m.mu.Unlock()
			calls, outputs := piTurns(body)
			name, args, text := m.next(calls, outputs)
			if r.URL.Path == "/v1/messages" {
				writeMessagesStep(w, gjson.GetBytes(body, "model").String(), len(calls), name, args, text)
			} else {
				writeChatStep(w, len(calls), name, args, text)
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(m.Close)
	return m
}

// piCall is one tool call the model made: its name and its JSON arguments.
type piCall struct{ name, args string }

// piTurns reads the tool calls and the tool outputs, in order, of a chat
// or Messages request.
func piTurns(body []byte) (calls []piCall, outputs []string) {
	text := func(c gjson.Result) string {
		if c.Type == gjson.String {
			return c.String()
		}
		return strings.Join(stringsOfAll(c.Get("#.text")), "\n")
	}
	gjson.GetBytes(body, "messages").ForEach(func(_, msg gjson.Result) bool {
		msg.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
			calls = append(calls, piCall{c.Get("function.name").String(), c.Get("function.arguments").String()})
			return true
		})
		if msg.Get("role").String() == "tool" {
			outputs = append(outputs, text(msg.Get("content")))
		}
		msg.Get("content").ForEach(func(_, block gjson.Result) bool {
			switch block.Get("type").String() {
			case "tool_use":
				calls = append(calls, piCall{block.Get("name").String(), block.Get("input").Raw})
			case "tool_result":
				outputs = append(outputs, text(block.Get("content")))
			}
			return true
		})
		return true
	})
	return calls, outputs
}

// chunkOf is how many lines of the saved output the model reads at a time.
const chunkOf = 400

// next is the scripted model's next step: a tool and its arguments, or a
// final text.
func (m *scriptedPi) next(calls []piCall, outputs []string) (name, args, text string) {
	last := ""
	if len(outputs) > 0 {
		last = outputs[len(outputs)-1]
	}
	bash := func(args string) (string, string, string) {
		in, _ := json.Marshal(map[string]any{"command": m.cli + " " + args})
		return "bash", string(in), ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(calls)
	switch {
	case n == 0:
		return bash("open " + m.page)
	case n == 1:
		return bash("snapshot -i")
	case calls[n-1].name == "bash" && strings.Contains(calls[n-1].args, "snapshot"), calls[n-1].name == "read":
		if full := piFullOutput.FindStringSubmatch(last); full != nil {
			// pi cut the snapshot: read the start of the saved output back.
			in, _ := json.Marshal(map[string]any{"path": full[1], "offset": 1, "limit": chunkOf})
			return "read", string(in), ""
		}
		if calls[n-1].name == "read" {
			m.chunks = append(m.chunks, strings.Count(last, "ref=e"))
		}
		// The target's ref as the model read it in any output it was sent.
		sm := m.target.FindStringSubmatch(strings.Join(outputs, "\n"))
		if sm == nil {
			m.lost = true
			return "", "", "The page I was shown has no such button."
		}
		m.clicked = sm[1]
		return bash("click @" + sm[1])
	}
	m.result = last
	return "", "", "Done: the order is placed."
}

// writeChatStep streams one step as chat completion chunks.
func writeChatStep(w http.ResponseWriter, turn int, name, args, text string) {
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-e2e", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	if name != "" {
		chunk(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprintf("call_%d", turn), "type": "function",
			"function": map[string]any{"name": name, "arguments": args}}}}, nil)
		chunk(map[string]any{}, "tool_calls")
	} else {
		chunk(map[string]any{"role": "assistant", "content": text}, nil)
		chunk(map[string]any{}, "stop")
	}
	io.WriteString(w, `data: {"id":"chatcmpl-e2e","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`+"\n\ndata: [DONE]\n\n")
}

// writeMessagesStep streams one step as Anthropic Messages events.
func writeMessagesStep(w http.ResponseWriter, model string, turn int, name, args, text string) {
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(typ string, data map[string]any) {
		data["type"] = typ
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
	}
	event("message_start", map[string]any{"message": map[string]any{"id": fmt.Sprintf("msg_pi_%d", turn), "type": "message", "role": "assistant",
		"model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 100, "output_tokens": 1}}})
	stop := "end_turn"
	if name == "" {
		event("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		event("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": text}})
	} else {
		stop = "tool_use"
		event("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_pi_%d", turn), "name": name, "input": map[string]any{}}})
		event("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": args}})
	}
	event("content_block_stop", map[string]any{"index": 0})
	event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 10}})
	event("message_stop", map[string]any{})
}

// The real pi coding agent (the pinned @mariozechner/pi-coding-agent), its
// models.json provider pointed at the gateway (api openai-completions, and
// anthropic-messages on the form), drives the agent-browser CLI through its
// bash tool. On the form, the
// snapshot reaches the model pruned with the target kept and the click
// lands. On the catalogue, whose snapshot is over pi's 50 KB, pi keeps the
// output's tail above a note naming the saved full output, and the model
// reads the file's first chunk back: the tail and the chunk are pruned, the
// note stays, and the click lands on the ref read in the tail.
//
// FOCUSGATE_E2E_CAPTURE=DIR writes each body pi sent into
// DIR/<case>/NN-chat-stream.json (see testdata/agents/README.md).
func TestPiRunsThroughTheGateway(t *testing.T) {
	node, modules, chromium := e2eRequirements(t)
	pi := e2eBin(t, modules, "pi", "pi")
	small := httptest.NewServer(http.FileServer(http.Dir("../../e2e/pages")))
	t.Cleanup(small.Close)
	big := httptest.NewServer(http.FileServer(http.Dir(bigPage(t))))
	t.Cleanup(big.Close)
	for _, tc := range []struct {
		name, page string
		big        bool
		api        string // the provider's api in models.json
	}{
		{"agent-browser-form", small.URL + "/form.html", false, "openai-completions"},
		{"agent-browser-catalogue", big.URL + "/catalogue.html", true, "openai-completions"},
		{"agent-browser-form-messages", small.URL + "/form.html", false, "anthropic-messages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := agentHome(t)
			// agent-browser's socket lives under its socket directory, whose
			// path must stay short (a Unix socket path has at most 103 bytes).
			sockets, err := os.MkdirTemp("", "ab")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(sockets) })
			session := "fg-e2e-pi"
			cli := filepath.Join(modules, ".bin/agent-browser") + " --session " + session
			model := newScriptedPi(t, tc.page, cli, agentBrowserTools.target)
			env, base, endpoint := map[string]string{
				"FOCUSGATE_UPSTREAM_URL":  model.URL + "/v1",
				"FOCUSGATE_RETRIEVER_URL": model.URL + "/v1",
			}, "/v1", "chat-stream"
			if tc.api == "anthropic-messages" {
				// Anthropic's SDK adds /v1/messages to the base URL.
				env, base, endpoint = map[string]string{"FOCUSGATE_ANTHROPIC_URL": model.URL}, "", "messages-stream"
			}
			gw := startGateway(t, env)
			front := newClientRecorder(t, gw.URL)
			agentDir := filepath.Join(home, ".pi", "agent")
			if err := os.MkdirAll(agentDir, 0o700); err != nil {
				t.Fatal(err)
			}
			writeJSONFile(filepath.Join(agentDir, "models.json"), map[string]any{"providers": map[string]any{"focusgate": map[string]any{
				"baseUrl": front.URL + base, "api": tc.api, "apiKey": "PI_E2E_KEY",
				"models": []any{map[string]any{"id": "gpt-4.1"}, map[string]any{"id": "claude-sonnet-4-5"}},
			}}})
			t.Cleanup(func() {
				stop := exec.Command(filepath.Join(modules, ".bin/agent-browser"), "--session", session, "close")
				stop.Env = []string{"HOME=" + home, "AGENT_BROWSER_EXECUTABLE_PATH=" + chromium, "AGENT_BROWSER_SOCKET_DIR=" + sockets}
				stop.Run()
			})

			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, pi, "-p", "Open "+tc.page+" in the browser with agent-browser and click Place order.",
				"--model", "focusgate/"+map[bool]string{true: "claude-sonnet-4-5", false: "gpt-4.1"}[base == ""], "--no-session", "--tools", "bash,read")
			cmd.Dir = home
			cmd.Env = []string{
				"HOME=" + home, "PATH=" + filepath.Dir(node) + ":" + os.Getenv("PATH"), "PI_CODING_AGENT_DIR=" + agentDir,
				"PI_E2E_KEY=sk-e2e-not-a-real-key", "AGENT_BROWSER_EXECUTABLE_PATH=" + chromium, "AGENT_BROWSER_SOCKET_DIR=" + sockets,
				"PI_SKIP_VERSION_CHECK=1",
			}
			out, err := cmd.CombinedOutput()
			bodies, answers := front.sent()
			if dir := os.Getenv("FOCUSGATE_E2E_CAPTURE"); dir != "" {
				for k, b := range bodies {
					captureBody(t, filepath.Join(dir, tc.name, fmt.Sprintf("%02d-%s.json", k+1, endpoint)), b, piVendorText)
				}
			}
			if err != nil {
				t.Fatalf("pi: %v\n%s", err, tail(string(out), 3000))
			}
			if !strings.Contains(string(out), "Done: the order is placed.") {
				t.Errorf("pi did not finish:\n%s", tail(string(out), 2000))
			}
			model.mu.Lock()
			defer model.mu.Unlock()
			if model.lost || model.clicked == "" {
				t.Fatalf("the model never saw the target in the snapshot (lost %v): pruning hid it\n%s", model.lost, tail(string(out), 2000))
			}
			if !strings.Contains(model.result, "Done") && !strings.Contains(model.result, "✓") {
				t.Errorf("the click on %s did not land: %.300q", model.clicked, model.result)
			}
			if len(bodies) != len(model.action) {
				t.Fatalf("pi sent %d requests, the model received %d", len(bodies), len(model.action))
			}
			pruned := 0
			for k := range bodies {
				status := answers[k].Get("X-Focusgate-Status")
				if !strings.Contains(string(bodies[k]), "ref=e") {
					if string(bodies[k]) != string(model.action[k]) {
						t.Errorf("request %d: a request without a page was changed (status %q)", k, status)
					}
					continue
				}
				if !strings.HasPrefix(status, "pruned") {
					t.Errorf("request %d: X-Focusgate-Status %q, want pruned: the page reached the model whole", k, status)
					continue
				}
				pruned++
				if k > 0 {
					checkTurnsPrefix(t, fmt.Sprint("request ", k), model.action[k-1], model.action[k])
				}
				before, after := newestToolOutput(bodies[k]), newestToolOutput(model.action[k])
				if !strings.Contains(before, "ref=e") {
					continue // an older page re-applied; the newest output holds none
				}
				if agentBrowserTools.target.MatchString(before) && !agentBrowserTools.target.MatchString(after) {
					t.Errorf("request %d: the target's line was pruned away", k)
				}
				if refs := strings.Count(after, "ref=e"); refs > 12 {
					t.Errorf("request %d: the output kept %d element refs of %d, want a few", k, refs, strings.Count(before, "ref=e"))
				}
				if full := piFullOutput.FindString(before); full != "" && !strings.Contains(after, full) {
					t.Errorf("request %d: the pruned output lost pi's note %q", k, full)
				}
			}
			if pruned == 0 {
				t.Errorf("no request of %d was pruned", len(bodies))
			}
			if tc.big && len(model.chunks) == 0 {
				t.Errorf("the model read no chunk of the saved output: pi did not cut the snapshot")
			}
			t.Logf("%d requests, %d pruned, element refs in each chunk read back as the model got it %v, click on %s", len(bodies), pruned, model.chunks, model.clicked)
		})
	}
}

// piVendorText says which strings of a pi body are its own prose: the
// system prompt (the first chat message's string, or the Messages API's system) and
// the tools' descriptions.
func piVendorText(path []string, _ string) (string, bool) {
	last := path[len(path)-1]
	return "", path[0] == "tools" && last == "description" ||
		path[0] == "system" && (len(path) == 1 || last == "text") ||
		len(path) == 3 && path[0] == "messages" && path[1] == "0" && last == "content" // chat's system message
}
