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

// scriptedCodex plays OpenAI for a real Codex run through the gateway: the
// action model, which drives a browser MCP server's tools, or the
// agent-browser CLI with exec_command (open, snapshot, a click on the ref it
// READ in the output it was sent), and the retriever the gateway asks, which
// keeps the root and the target's line.
type scriptedCodex struct {
	*httptest.Server
	page    string
	tools   browserTools
	cli     string // agent-browser's path: Codex runs commands in a login shell, whose PATH is its own
	target  *regexp.Regexp
	mu      sync.Mutex
	clicked string
	lost    bool
	noTools bool // a request offered no browser tool
}

// maxToolSearches bounds the tool searches and waits of a scripted Codex
// run for its MCP server's tools; waitCommand is how it waits.
const (
	maxToolSearches = 30
	waitCommand     = "sleep 1 # waiting for the browser tools"
)

// toolName is an MCP tool's own name, without its server's namespace.
func toolName(full string) string {
	_, name, _ := strings.Cut(strings.TrimPrefix(full, "mcp__"), "__")
	return name
}

func newScriptedCodex(t *testing.T, page string, tools browserTools, cli string) *scriptedCodex {
	t.Helper()
	m := &scriptedCodex{page: page, tools: tools, cli: cli, target: tools.target}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/v1/chat/completions":
			m.retrieve(w, body)
		case "/v1/responses":
			m.respond(w, body)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *scriptedCodex) respond(w http.ResponseWriter, body []byte) {
	tools := gjson.GetBytes(body, "tools").Raw
	snapshot := `"` + toolName(m.tools.snapshot) + `"`
	loaded := strings.Contains(tools, snapshot)
	searches := 0
	gjson.GetBytes(body, "input").ForEach(func(_, it gjson.Result) bool {
		if it.Get("type").String() == "tool_search_output" {
			searches++
			loaded = loaded || strings.Contains(it.Raw, snapshot)
		}
		return true
	})
	if m.tools.cli == "" && !loaded {
		// Codex offers an MCP server's tools through tool_search, which
		// finds them once the server has started: the model loads them
		// first, as a real one does, and searches again while the search
		// finds none (a server still starting).
		waits := strings.Count(gjson.GetBytes(body, "input").Raw, waitCommand)
		switch {
		case searches+waits >= maxToolSearches:
			m.mu.Lock()
			m.noTools = true
			m.mu.Unlock()
		case !strings.Contains(tools, `"tool_search"`):
			// Nothing to search yet: Codex lists a server's tools a moment
			// after starting it. The model waits a second in the shell.
			args, _ := json.Marshal(map[string]string{"cmd": waitCommand})
			m.stream(w, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_wait_%d", waits), "call_id": fmt.Sprintf("call_wait_%d", waits),
				"name": "exec_command", "arguments": string(args), "status": "completed"})
			return
		default:
			query := strings.Join([]string{toolName(m.tools.navigate), toolName(m.tools.snapshot), toolName(m.tools.click)}, " ")
			m.stream(w, map[string]any{"type": "tool_search_call", "id": fmt.Sprintf("tsc_%d", searches), "call_id": fmt.Sprintf("call_tool_search_%d", searches), "status": "completed",
				"execution": "client", "arguments": map[string]any{"query": query, "limit": 64}})
			return
		}
	}
	calls := 0
	var lastOutput string
	gjson.GetBytes(body, "input").ForEach(func(_, it gjson.Result) bool {
		switch it.Get("type").String() {
		case "function_call":
			if !strings.Contains(it.Get("arguments").String(), waitCommand) {
				calls++
			}
		case "function_call_output":
			// The waits for the tools all come before the first page.
			lastOutput = it.Get("output").String()
		}
		return true
	})
	call := func(name, args string) map[string]any {
		item := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", calls), "call_id": fmt.Sprintf("call_%d", calls),
			"name": name, "arguments": args, "status": "completed"}
		// Codex names an MCP tool by its server's namespace and its own name.
		if ns, tool, ok := strings.Cut(strings.TrimPrefix(name, "mcp__"), "__"); ok {
			item["namespace"], item["name"] = "mcp__"+codexServer(ns), tool
		}
		return item
	}
	run := func(args string) map[string]any {
		if m.tools.cli == "" {
			return nil
		}
		a, _ := json.Marshal(map[string]string{"cmd": m.cli + " --session fg-e2e-codex " + args})
		return call("exec_command", string(a))
	}
	tl := m.tools
	say := func(text string) map[string]any {
		return map[string]any{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
	}
	var item map[string]any
	switch calls {
	case 0:
		if item = run("open " + m.page); item == nil {
			item = call(tl.navigate, fmt.Sprintf(tl.navigateInput, m.page))
		}
	case 1:
		if item = run("snapshot -i"); item == nil {
			item = call(tl.snapshot, tl.snapshotInput)
		}
	case 2:
		sm := m.target.FindStringSubmatch(strings.ReplaceAll(lastOutput, `\"`, `"`))
		m.mu.Lock()
		if sm == nil {
			m.lost = true
			item = say("The page I was shown has no such button.")
		} else {
			m.clicked = sm[1]
			if item = run("click @" + sm[1]); item == nil {
				item = call(tl.click, fmt.Sprintf(tl.clickInput, sm[1]))
			}
		}
		m.mu.Unlock()
	default:
		item = say("Done: the order is placed.")
	}
	m.stream(w, item)
}

// stream answers with one output item, as Responses events.
func (m *scriptedCodex) stream(w http.ResponseWriter, item map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", data["type"], b)
		w.(http.Flusher).Flush()
	}
	event(map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_e2e", "object": "response", "status": "in_progress", "output": []any{}}})
	event(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	event(map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_e2e", "object": "response", "status": "completed",
		"output": []any{item}, "usage": map[string]any{"input_tokens": 100, "output_tokens": 10, "total_tokens": 110,
			"input_tokens_details": map[string]int{"cached_tokens": 0}, "output_tokens_details": map[string]int{"reasoning_tokens": 0}}}})
}

// retrieve answers the gateway's retriever call (chat completions): line 1
// and the target's.
func (m *scriptedCodex) retrieve(w http.ResponseWriter, body []byte) {
	prompt := gjson.GetBytes(body, "messages.1.content").String()
	ranges := []string{"(1,1)"}
	for _, line := range strings.Split(prompt, "\n") {
		if sm := numberedLine.FindStringSubmatch(line); sm != nil && m.target.MatchString(line) {
			ranges = append(ranges, "("+sm[1]+","+sm[1]+")")
		}
	}
	answer, _ := json.Marshal("<answer>[" + strings.Join(ranges, ", ") + "]</answer>")
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"r","object":"chat.completion","created":1,"model":"gpt-4.1-mini","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`, answer)
}

// The real Codex CLI (the pinned @openai/codex), its model provider pointed
// at the gateway, drives a browser against a local page: Playwright MCP and
// chrome-devtools-mcp as MCP servers, agent-browser through exec_command. The
// snapshot, under Codex's output header, reaches the model pruned with the
// target kept, and the click lands on the ref it read there.
func TestCodexRunsThroughTheGateway(t *testing.T) {
	node, modules, chromium := e2eRequirements(t)
	codex := e2eBin(t, modules, "codex", "Codex")
	// Codex cuts the middle of a tool result longer than about 1,600 tokens
	// itself (…N tokens truncated…), before any gateway sees it: the e2e
	// pages' snapshots lose their buttons there. This form's fits, and the
	// gateway prunes pages from 300 tokens on.
	var form strings.Builder
	form.WriteString("<!doctype html><title>New employee</title><h1>New employee</h1><form>")
	for i := range 24 {
		fmt.Fprintf(&form, "<label>Field %d <input name=f%d></label>", i, i)
	}
	form.WriteString("<button type=button>Save employee</button></form>")
	pages := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, form.String())
	}))
	t.Cleanup(pages.Close)
	for name, tools := range map[string]browserTools{"playwright-mcp": playwrightTools, "chrome-devtools-mcp": chromeDevToolsTools, "agent-browser": agentBrowserTools} {
		t.Run(name, func(t *testing.T) {
			tools.target = regexp.MustCompile(strings.ReplaceAll(tools.target.String(), "Place order", "Save employee"))
			model := newScriptedCodex(t, pages.URL+"/admin", tools, filepath.Join(modules, ".bin/agent-browser"))
			gw := startGateway(t, map[string]string{
				"FOCUSGATE_UPSTREAM_URL":  model.URL + "/v1",
				"FOCUSGATE_RETRIEVER_URL": model.URL + "/v1",
				"FOCUSGATE_MIN_TOKENS":    "300",
			})
			front := newClientRecorder(t, gw.URL)

			home := t.TempDir()
			codexHome := filepath.Join(home, "codex")
			work := filepath.Join(home, "work")
			for _, d := range []string{codexHome, work} {
				if err := os.MkdirAll(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			// A model Codex knows: with one it does not, Codex falls back
			// to metadata that offers no MCP tool at all.
			config := fmt.Sprintf("model = \"gpt-5.5\"\nmodel_provider = \"focusgate\"\n\n[model_providers.focusgate]\nname = \"focusgate\"\nbase_url = %q\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n", front.URL+"/v1")
			if tools.cli == "" {
				server := codexServer(strings.SplitN(strings.TrimPrefix(tools.navigate, "mcp__"), "__", 2)[0])
				s := tools.server(node, modules, chromium, home)
				args, _ := json.Marshal(s["args"]) // a JSON array of strings is a TOML array
				// Codex waits for a required MCP server before the first
				// turn (otherwise it may send the turn without the
				// server's tools), and gives up on one that takes longer
				// than its startup timeout (10 s): a busy machine takes
				// that long to start a browser.
				config += fmt.Sprintf("\n[mcp_servers.%s]\ncommand = %q\nargs = %s\nrequired = true\nstartup_timeout_sec = 180\ntool_timeout_sec = 180\n", server, s["command"], args)
				if env, ok := s["env"].(map[string]string); ok {
					config += fmt.Sprintf("\n[mcp_servers.%s.env]\n", server)
					for k, v := range env {
						config += fmt.Sprintf("%s = %q\n", k, v)
					}
				}
			} else {
				t.Cleanup(func() {
					stop := exec.Command(filepath.Join(modules, ".bin/agent-browser"), "--session", "fg-e2e-codex", "close")
					stop.Env = []string{"HOME=" + home, "AGENT_BROWSER_EXECUTABLE_PATH=" + chromium}
					stop.Run()
				})
			}
			if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600); err != nil {
				t.Fatal(err)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
				"Open "+pages.URL+"/admin in the browser and click Save employee.")
			cmd.Dir = work
			cmd.Env = []string{
				"HOME=" + home, "CODEX_HOME=" + codexHome, "PATH=" + filepath.Join(modules, ".bin") + ":" + os.Getenv("PATH"),
				"AGENT_BROWSER_EXECUTABLE_PATH=" + chromium, "OPENAI_API_KEY=sk-e2e-not-a-real-key",
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("codex: %v\n%s", err, tail(string(out), 3000))
			}
			model.mu.Lock()
			clicked, lost, noTools := model.clicked, model.lost, model.noTools
			model.mu.Unlock()
			bodies, answers := front.sent()
			switch {
			case clicked != "":
			case noTools:
				t.Fatalf("Codex offered the model no browser tool: its MCP server did not start (the client failed, not the gateway)\n%s", tail(string(out), 2000))
			case lost:
				t.Fatalf("the model did not find the target in the snapshot: %s\n%s", whereTheTargetWent(bodies, answers, tools.target), tail(string(out), 2000))
			default:
				t.Fatalf("the model never got a snapshot (%d requests reached the gateway): the client or its tool failed\n%s", len(answers), tail(string(out), 2000))
			}
			if !strings.Contains(string(out), "Done: the order is placed.") {
				t.Errorf("Codex did not finish:\n%s", tail(string(out), 2000))
			}
			pruned := 0
			for i, h := range answers {
				if !strings.HasPrefix(h.Get("X-Focusgate-Status"), "pruned") {
					continue
				}
				pruned++
				outputs := gjson.GetBytes(bodies[i], `input.#(type=="function_call_output")#.output`).Array()
				if len(outputs) == 0 || !strings.Contains(outputs[len(outputs)-1].Raw, "Wall time: ") {
					t.Errorf("request %d: the pruned output lost Codex's header", i)
				}
				if tools.target.FindStringSubmatch(strings.ReplaceAll(string(bodies[i]), `\"`, `"`)) == nil {
					t.Errorf("request %d was pruned, and the target is not in what the client sent", i)
				}
			}
			if pruned == 0 {
				t.Errorf("no request of %d was pruned: the snapshot reached the model whole", len(answers))
			}
			t.Logf("%d requests, %d pruned, click on %s", len(answers), pruned, clicked)
		})
	}
}

// codexServer is the name an MCP server is given in Codex's configuration,
// which becomes its tools' namespace: without the hyphens Codex does not keep.
func codexServer(name string) string { return strings.ReplaceAll(name, "-", "") }

// whereTheTargetWent says, of a run whose model did not find the target in
// the page it was sent, whose doing that was: the client's (the last request
// with a page already lacked it as the client sent it), or pruning's (the
// client sent it, and the gateway answered that request pruned).
func whereTheTargetWent(bodies [][]byte, answers []http.Header, target *regexp.Regexp) string {
	for i := len(bodies) - 1; i >= 0; i-- {
		if answers[i].Get("X-Focusgate-Status") == "" {
			continue
		}
		sent := target.MatchString(strings.ReplaceAll(string(bodies[i]), `\"`, `"`))
		status := answers[i].Get("X-Focusgate-Status")
		switch {
		case !sent:
			return fmt.Sprintf("request %d already lacked it as the client sent it (status %q): the client or its tool lost it, not the gateway", i, status)
		case strings.HasPrefix(status, "pruned"):
			return fmt.Sprintf("request %d held it as the client sent it and was pruned (status %q): pruning removed it", i, status)
		default:
			return fmt.Sprintf("request %d held it and went %q: the upstream got it whole", i, status)
		}
	}
	return "no request reached the gateway"
}
