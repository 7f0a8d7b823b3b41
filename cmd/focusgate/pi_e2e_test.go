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

// scriptedPi plays an OpenAI-compatible model for a real pi run through the
// gateway: the action model, which drives the agent-browser CLI through pi's
// bash tool (open, a snapshot of the interactive elements, a click on the ref
// it READ in the output it was sent), and the retriever the gateway asks,
// which keeps the root and the target's line. On a page whose snapshot pi
// cuts, the model first reads the start of the saved full output back with
// pi's read tool.
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
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		if strings.HasPrefix(gjson.GetBytes(body, "messages.0.content").String(), "You work in front of a web agent") {
			(&scriptedCodex{target: target}).retrieve(w, body)
			return
		}
		m.mu.Lock()
		m.action = append(m.action, body)
		m.mu.Unlock()
		m.respond(w, body)
	}))
	t.Cleanup(m.Close)
	return m
}

// chunkOf is how many lines of the saved output the model reads at a time.
const chunkOf = 400

func (m *scriptedPi) respond(w http.ResponseWriter, body []byte) {
	var calls []gjson.Result
	last := ""
	gjson.GetBytes(body, "messages").ForEach(func(_, msg gjson.Result) bool {
		msg.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
			calls = append(calls, c.Get("function"))
			return true
		})
		if msg.Get("role").String() == "tool" {
			if c := msg.Get("content"); c.Type == gjson.String {
				last = c.String()
			} else {
				last = strings.Join(stringsOf(c.Get("#.text")), "\n")
			}
		}
		return true
	})
	bash := func(args string) (string, string) {
		in, _ := json.Marshal(map[string]any{"command": m.cli + " " + args})
		return "bash", string(in)
	}
	name, args, text := "", "", ""
	m.mu.Lock()
	switch n := len(calls); {
	case n == 0:
		name, args = bash("open " + m.page)
	case n == 1:
		name, args = bash("snapshot -i")
	case calls[n-1].Get("name").String() == "bash" && strings.Contains(calls[n-1].Get("arguments").String(), "snapshot"),
		calls[n-1].Get("name").String() == "read":
		if full := piFullOutput.FindStringSubmatch(last); full != nil {
			// pi cut the snapshot: read the start of the saved output back.
			in, _ := json.Marshal(map[string]any{"path": full[1], "offset": 1, "limit": chunkOf})
			name, args = "read", string(in)
			break
		}
		if calls[n-1].Get("name").String() == "read" {
			m.chunks = append(m.chunks, strings.Count(last, "ref=e"))
		}
		// The target's ref as the model read it in any output it was sent.
		sm := m.target.FindStringSubmatch(strings.ReplaceAll(strings.Join(stringsOf(gjson.GetBytes(body, `messages.#(role=="tool")#.content`)), "\n"), `\"`, `"`))
		if sm == nil {
			m.lost = true
			text = "The page I was shown has no such button."
			break
		}
		m.clicked = sm[1]
		name, args = bash("click @" + sm[1])
	default:
		m.result = last
		text = "Done: the order is placed."
	}
	m.mu.Unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-e2e", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	if name != "" {
		chunk(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprintf("call_%d", len(calls)), "type": "function",
			"function": map[string]any{"name": name, "arguments": args}}}}, nil)
		chunk(map[string]any{}, "tool_calls")
	} else {
		chunk(map[string]any{"role": "assistant", "content": text}, nil)
		chunk(map[string]any{}, "stop")
	}
	io.WriteString(w, `data: {"id":"chatcmpl-e2e","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`+"\n\ndata: [DONE]\n\n")
}

func stringsOf(r gjson.Result) []string {
	var out []string
	r.ForEach(func(_, v gjson.Result) bool { out = append(out, v.String()); return true })
	return out
}

// The real pi coding agent (the pinned @mariozechner/pi-coding-agent), its
// models.json provider pointed at the gateway (api openai-completions),
// drives the agent-browser CLI through its bash tool. On the form, the
// snapshot reaches the model pruned with the target kept and the click
// lands. On the catalogue, whose snapshot is over pi's 50 KB, pi keeps the
// output's tail above a note naming the saved full output, and the model
// reads the file's first chunk back: the tail and the chunk are pruned, the
// note stays, and the click lands on the ref read in the tail.
//
// FOCUSGATE_E2E_CAPTURE=DIR writes each body pi sent into
// DIR/<case>/NN-chat-stream.json (see testdata/agents/README.md).
func TestPiRunsThroughTheGateway(t *testing.T) {
	node := e2eRequirements(t)
	modules, _ := filepath.Abs("../../e2e/node_modules")
	pi := filepath.Join(modules, ".bin/pi")
	if _, err := os.Stat(pi); err != nil {
		t.Fatalf("pi is not installed (%v): run scripts/install-e2e.sh", err)
	}
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	small := httptest.NewServer(http.FileServer(http.Dir("../../e2e/pages")))
	t.Cleanup(small.Close)
	big := httptest.NewServer(http.FileServer(http.Dir(bigPage(t))))
	t.Cleanup(big.Close)
	for _, tc := range []struct {
		name, page string
		big        bool
	}{
		{"agent-browser-form", small.URL + "/form.html", false},
		{"agent-browser-catalogue", big.URL + "/catalogue.html", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			session := "fg-e2e-pi-" + filepath.Base(home)
			cli := filepath.Join(modules, ".bin/agent-browser") + " --session " + session
			model := newScriptedPi(t, tc.page, cli, agentBrowserTools.target)
			gw := startGateway(t, map[string]string{
				"FOCUSGATE_UPSTREAM_URL":  model.URL + "/v1",
				"FOCUSGATE_RETRIEVER_URL": model.URL + "/v1",
			})
			front := newClientRecorder(t, gw.URL)
			agentDir := filepath.Join(home, ".pi", "agent")
			if err := os.MkdirAll(agentDir, 0o700); err != nil {
				t.Fatal(err)
			}
			writeJSONFile(filepath.Join(agentDir, "models.json"), map[string]any{"providers": map[string]any{"focusgate": map[string]any{
				"baseUrl": front.URL + "/v1", "api": "openai-completions", "apiKey": "PI_E2E_KEY",
				"models": []any{map[string]any{"id": "gpt-4.1"}},
			}}})
			t.Cleanup(func() {
				stop := exec.Command(filepath.Join(modules, ".bin/agent-browser"), "--session", session, "close")
				stop.Env = []string{"HOME=" + home, "AGENT_BROWSER_EXECUTABLE_PATH=" + chromium}
				stop.Run()
			})

			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, pi, "-p", "Open "+tc.page+" in the browser with agent-browser and click Place order.",
				"--model", "focusgate/gpt-4.1", "--no-session", "--tools", "bash,read")
			cmd.Dir = home
			cmd.Env = []string{
				"HOME=" + home, "PATH=" + filepath.Dir(node) + ":" + os.Getenv("PATH"), "PI_CODING_AGENT_DIR=" + agentDir,
				"PI_E2E_KEY=sk-e2e-not-a-real-key", "AGENT_BROWSER_EXECUTABLE_PATH=" + chromium, "PI_SKIP_VERSION_CHECK=1",
			}
			out, err := cmd.CombinedOutput()
			bodies, answers := front.recorded()
			if dir := os.Getenv("FOCUSGATE_E2E_CAPTURE"); dir != "" {
				for k, b := range bodies {
					captureBody(t, filepath.Join(dir, tc.name, fmt.Sprintf("%02d-chat-stream.json", k+1)), b, openaiVendorText)
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
					checkConversationPrefix(t, modelRequest{fmt.Sprint(k - 1), model.action[k-1]}, modelRequest{fmt.Sprint(k), model.action[k]})
				}
				before, after := lastToolOutput(bodies[k]), lastToolOutput(model.action[k])
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

// lastToolOutput is the newest tool message's text in a chat request.
func lastToolOutput(body []byte) string {
	out := ""
	gjson.GetBytes(body, "messages").ForEach(func(_, msg gjson.Result) bool {
		if msg.Get("role").String() == "tool" {
			if c := msg.Get("content"); c.Type == gjson.String {
				out = c.String()
			} else {
				out = strings.Join(stringsOf(c.Get("#.text")), "\n")
			}
		}
		return true
	})
	return out
}

// openaiVendorText says which strings of a chat or Responses body are the
// agent vendor's own prose: the system or developer message's text and the
// tools' descriptions.
func openaiVendorText(path []string, _ string) (string, bool) {
	if path[0] == "tools" && path[len(path)-1] == "description" || path[0] == "instructions" {
		return "", true
	}
	last := path[len(path)-1]
	return "", len(path) >= 3 && path[0] == "messages" && path[1] == "0" && path[2] == "content" && (last == "content" || last == "text")
}
