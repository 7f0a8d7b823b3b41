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
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// scriptedClaude plays Anthropic for a real Claude Code run through the
// gateway: the action model, which drives Playwright MCP step by step
// (loading each tool with ToolSearch, as Claude Code does), and the Claude
// retriever the gateway asks, which keeps the root and the target's line.
// The click names the ref the model READ in the snapshot it was sent, so a
// pruned-away target ends the run without a click.
type scriptedClaude struct {
	*httptest.Server
	page    string
	tools   browserTools
	target  *regexp.Regexp // the target's line; its ref is the first group
	mu      sync.Mutex
	clicked string // the ref the click named
	lost    bool   // a snapshot reached the model without the target
	// script, when set, plays the model instead of next.
	script  func(body []byte) (name, input string)
	counted [][]byte // the count_tokens bodies as they arrived
}

// messageIDs numbers the scripted answers: Claude Code joins consecutive
// assistant messages that share an id into one, as the parts of one answer.
var messageIDs atomic.Int64

// browserTools are the MCP tools of one browser server, as Claude Code names
// them, and the inputs the scripted model gives them; or, with cli set, the
// commands of a browser CLI that the model runs through Claude Code's Bash
// tool.
type browserTools struct {
	cli                          string // the CLI's command line prefix, when the browser is a CLI
	navigate, snapshot, click    string
	navigateInput, snapshotInput string // navigateInput has one %q: the URL
	clickInput                   string // one %q: the ref
	target                       *regexp.Regexp
	server                       func(node, modules, chromium, home string) map[string]any
}

var playwrightTools = browserTools{
	navigate: "mcp__playwright__browser_navigate", snapshot: "mcp__playwright__browser_snapshot", click: "mcp__playwright__browser_click",
	navigateInput: `{"url":%q}`, snapshotInput: `{}`, clickInput: `{"element":"Place order button","target":%q}`,
	target: regexp.MustCompile(`button "Place order" \[ref=(\w+)\]`),
	server: func(node, modules, chromium, home string) map[string]any {
		cfg := filepath.Join(home, "playwright.json")
		writeJSONFile(cfg, map[string]any{
			"browser": map[string]any{
				"browserName":   "chromium",
				"userDataDir":   filepath.Join(home, "profile"),
				"launchOptions": map[string]any{"executablePath": chromium, "headless": true, "chromiumSandbox": false, "args": chromeArgs},
			},
			"outputDir": filepath.Join(home, "output"),
		})
		return map[string]any{"command": node, "args": []string{filepath.Join(modules, "@playwright/mcp/cli.js"), "--config", cfg}}
	},
}

var chromeDevToolsTools = browserTools{
	navigate: "mcp__chrome-devtools__navigate_page", snapshot: "mcp__chrome-devtools__take_snapshot", click: "mcp__chrome-devtools__click",
	navigateInput: `{"pageId":1,"type":"url","url":%q}`, snapshotInput: `{"pageId":1}`, clickInput: `{"pageId":1,"uid":%q}`,
	target: regexp.MustCompile(`uid=(\S+) button "Place order"`),
	server: func(node, modules, chromium, home string) map[string]any {
		args := []string{filepath.Join(modules, "chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js"), "--headless",
			"--executablePath", chromium, "--userDataDir", filepath.Join(home, "profile"), "--usageStatistics=false", "--performanceCrux=false"}
		for _, a := range chromeArgs {
			args = append(args, "--chromeArg="+a)
		}
		return map[string]any{"command": node, "args": args, "env": map[string]string{"CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS": "1", "CI": "1"}}
	},
}

// agentBrowserTools drive the agent-browser CLI through Bash: open, a
// snapshot of the interactive elements, a click on the ref read there.
var agentBrowserTools = browserTools{
	cli:    "agent-browser --session fg-e2e",
	target: regexp.MustCompile(`button "Place order" \[ref=(\w+)\]`),
}

// chromeArgs keep Debian's chromium from stalling on a machine without a
// network, and let it run as root.
var chromeArgs = []string{"--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"}

func newScriptedClaude(t *testing.T, page string, tools browserTools) *scriptedClaude {
	t.Helper()
	m := &scriptedClaude{page: page, tools: tools, target: tools.target}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

func (m *scriptedClaude) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	switch {
	case strings.HasSuffix(r.URL.Path, "/count_tokens"):
		m.mu.Lock()
		m.counted = append(m.counted, body)
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens":1000}`)
		return
	case strings.HasPrefix(gjson.GetBytes(body, "system").String(), "You work in front of a web agent"):
		m.retrieve(w, body)
		return
	}
	next := m.next
	if m.script != nil {
		next = m.script
	}
	name, input := next(body)
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(typ string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		w.(http.Flusher).Flush()
	}
	model := gjson.GetBytes(body, "model").String()
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_e2e_%d", messageIDs.Add(1)), "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 100, "output_tokens": 1}}})
	stop := "end_turn"
	if name == "" {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": input}})
	} else {
		stop = "tool_use"
		id := fmt.Sprintf("toolu_e2e_%d", strings.Count(string(body), `"tool_use"`))
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": input}})
	}
	event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 10}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// next is the scripted model's next step, from the last tool it called:
// the tool to call and its input, or no tool and a final text.
func (m *scriptedClaude) next(body []byte) (name, input string) {
	if !gjson.GetBytes(body, `tools.#(name=="ToolSearch")`).Exists() {
		return "", "Nothing to do here." // Claude Code's side requests
	}
	if m.tools.cli != "" {
		return m.nextCommand(body)
	}
	last := ""
	gjson.GetBytes(body, "messages").ForEach(func(_, msg gjson.Result) bool {
		msg.Get("content").ForEach(func(_, block gjson.Result) bool {
			if block.Get("type").String() == "tool_use" {
				last = block.Get("name").String() + " " + block.Get("input").Raw
			}
			return true
		})
		return true
	})
	load := func(tool string) (string, string) {
		return "ToolSearch", `{"query":"select:` + tool + `","max_results":5}`
	}
	tl := m.tools
	switch {
	case last == "":
		return load(tl.navigate)
	case strings.Contains(last, "select:"+tl.navigate):
		return tl.navigate, fmt.Sprintf(tl.navigateInput, m.page)
	case strings.HasPrefix(last, tl.navigate):
		return load(tl.snapshot)
	case strings.Contains(last, "select:"+tl.snapshot):
		return tl.snapshot, tl.snapshotInput
	case strings.HasPrefix(last, tl.snapshot):
		return load(tl.click)
	case strings.Contains(last, "select:"+tl.click):
		// The ref as the model read it in the snapshot it was sent.
		ref := ""
		if sm := m.target.FindStringSubmatch(strings.ReplaceAll(string(body), `\"`, `"`)); sm != nil {
			ref = sm[1]
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if ref == "" {
			m.lost = true
			return "", "The page I was shown has no such button."
		}
		m.clicked = ref
		return tl.click, fmt.Sprintf(tl.clickInput, ref)
	}
	return "", "Done: the order is placed."
}

// nextCommand is the scripted model's next step with a browser CLI: the
// commands run so far say where it is.
func (m *scriptedClaude) nextCommand(body []byte) (name, input string) {
	ran := 0
	gjson.GetBytes(body, "messages").ForEach(func(_, msg gjson.Result) bool {
		msg.Get("content").ForEach(func(_, block gjson.Result) bool {
			if block.Get("type").String() == "tool_use" && block.Get("name").String() == "Bash" {
				ran++
			}
			return true
		})
		return true
	})
	bash := func(args string) (string, string) {
		in, _ := json.Marshal(map[string]string{"command": m.tools.cli + " " + args, "description": "Run agent-browser"})
		return "Bash", string(in)
	}
	switch ran {
	case 0:
		return bash("open " + m.page)
	case 1:
		return bash("snapshot -i")
	case 2:
		ref := ""
		if sm := m.target.FindStringSubmatch(strings.ReplaceAll(string(body), `\"`, `"`)); sm != nil {
			ref = sm[1]
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if ref == "" {
			m.lost = true
			return "", "The page I was shown has no such button."
		}
		m.clicked = ref
		return bash("click @" + ref)
	}
	return "", "Done: the order is placed."
}

// retrieve answers the gateway's retriever call: line 1 and the target's.
func (m *scriptedClaude) retrieve(w http.ResponseWriter, body []byte) {
	prompt := gjson.GetBytes(body, "messages.0.content").String()
	ranges := []string{"(1,1)"}
	for _, line := range strings.Split(prompt, "\n") {
		if sm := numberedLine.FindStringSubmatch(line); sm != nil && m.target.MatchString(line) {
			ranges = append(ranges, "("+sm[1]+","+sm[1]+")")
		}
	}
	answer, _ := json.Marshal("<answer>[" + strings.Join(ranges, ", ") + "]</answer>")
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"msg_r","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":%s}],"stop_reason":"end_turn","usage":{"input_tokens":100,"output_tokens":10}}`, answer)
}

// The real Claude Code CLI (the pinned @anthropic-ai/claude-code), pointed at
// the gateway with ANTHROPIC_BASE_URL and nothing else, drives a browser MCP
// server (Playwright MCP, chrome-devtools-mcp) against a local page: its
// snapshot reaches the model pruned with the target kept, the click lands on
// the ref the model read there, and no request fails.
func TestClaudeCodeRunsThroughTheGateway(t *testing.T) {
	node, modules, chromium := e2eRequirements(t)
	claude := e2eBin(t, modules, "claude", "Claude Code")
	pages := httptest.NewServer(http.FileServer(http.Dir("../../e2e/pages")))
	t.Cleanup(pages.Close)
	for name, tools := range map[string]browserTools{"playwright-mcp": playwrightTools, "chrome-devtools-mcp": chromeDevToolsTools, "agent-browser": agentBrowserTools} {
		t.Run(name, func(t *testing.T) {
			model := newScriptedClaude(t, pages.URL+"/form.html", tools)
			gw := startGateway(t, map[string]string{"FOCUSGATE_ANTHROPIC_URL": model.URL})
			front := newClientRecorder(t, gw.URL)

			home := t.TempDir()
			args := []string{"-p", "Open " + pages.URL + "/form.html in the browser and click Place order.",
				"--model", "claude-sonnet-4-5", "--output-format", "json"}
			if tools.cli != "" {
				// agent-browser runs Debian's chromium, never a browser of
				// its own; its session ends with the test.
				args = append(args, "--allowedTools", "Bash(agent-browser:*)")
				t.Cleanup(func() {
					stop := exec.Command(filepath.Join(modules, ".bin/agent-browser"), "--session", "fg-e2e", "close")
					stop.Env = []string{"HOME=" + home, "AGENT_BROWSER_EXECUTABLE_PATH=" + chromium}
					stop.Run()
				})
			} else {
				mcpConfig := filepath.Join(home, "mcp.json")
				server := strings.SplitN(strings.TrimPrefix(tools.navigate, "mcp__"), "__", 2)[0]
				writeJSONFile(mcpConfig, map[string]any{"mcpServers": map[string]any{server: tools.server(node, modules, chromium, home)}})
				args = append(args, "--mcp-config", mcpConfig,
					"--allowedTools", strings.Join([]string{"ToolSearch", tools.navigate, tools.snapshot, tools.click}, ","))
			}

			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, claude, args...)
			cmd.Dir = home
			cmd.Env = []string{
				"HOME=" + home, "PATH=" + filepath.Join(modules, ".bin") + ":" + os.Getenv("PATH"),
				"AGENT_BROWSER_EXECUTABLE_PATH=" + chromium,
				"ANTHROPIC_BASE_URL=" + front.URL, "ANTHROPIC_API_KEY=sk-ant-e2e-not-a-real-key",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("claude: %v\n%s", err, tail(string(out), 3000))
			}
			model.mu.Lock()
			clicked, lost := model.clicked, model.lost
			model.mu.Unlock()
			if lost || clicked == "" {
				t.Fatalf("the model never saw the target in its snapshot (lost %v): pruning hid it\n%s", lost, tail(string(out), 1000))
			}
			if r := gjson.GetBytes(out, "result").String(); r != "Done: the order is placed." {
				t.Errorf("Claude Code ended with %q", tail(string(out), 1000))
			}
			bodies, answers := front.sent()
			pruned := 0
			for i, h := range answers {
				if !strings.HasPrefix(h.Get("X-Focusgate-Status"), "pruned") {
					continue
				}
				pruned++
				if m := tools.target.FindStringSubmatch(strings.ReplaceAll(string(bodies[i]), `\"`, `"`)); m == nil {
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

// writeJSONFile writes v as JSON; the test fails later, when the tool
// cannot read it, should the write fail.
func writeJSONFile(path string, v any) {
	b, _ := json.Marshal(v)
	_ = os.WriteFile(path, b, 0o600)
}
