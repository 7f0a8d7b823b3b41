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
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
)

// capturedAgents are the conversations of the Claude Agent SDK, pi and Gemini
// CLI captured by their end-to-end tests (testdata/agents/README.md), each
// on Playwright MCP's or agent-browser's snapshot of a page whose task is to
// click "Place order", over the API the agent speaks.
var capturedAgents = []struct {
	agent string
	// path is where a captured file was sent, from its name.
	path func(file string) string
	// env points the gateway at the fake upstream for this API.
	env func(upstream string) map[string]string
}{
	{"claude-agent-sdk", func(f string) string {
		if strings.Contains(f, "count_tokens") {
			return "/v1/messages/count_tokens?beta=true"
		}
		return "/v1/messages?beta=true"
	}, func(u string) map[string]string { return map[string]string{"FOCUSGATE_ANTHROPIC_URL": u} }},
	{"pi", func(f string) string {
		if strings.Contains(f, "messages") {
			return "/v1/messages"
		}
		return "/v1/chat/completions"
	}, func(u string) map[string]string {
		return map[string]string{"FOCUSGATE_UPSTREAM_URL": u + "/v1", "FOCUSGATE_RETRIEVER_URL": u + "/v1", "FOCUSGATE_ANTHROPIC_URL": u}
	}},
	{"gemini-cli", func(f string) string {
		method := strings.TrimSuffix(f[strings.IndexByte(f, '-')+1:], ".json")
		if method == "streamGenerateContent" {
			return "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
		}
		return "/v1beta/models/gemini-2.5-flash:" + method
	}, func(u string) map[string]string { return map[string]string{"FOCUSGATE_GEMINI_URL": u} }},
}

// placeOrder is the line of the element the captured conversations act on,
// in Playwright MCP's and agent-browser's syntax.
var placeOrder = regexp.MustCompile(`button \\?"Place order\\?" \[ref=e\d+\]`)

// The captured conversations, replayed through the gateway against a fake
// upstream that also plays the retriever of each API: a request whose newest
// tool output holds a page (or a chunk of one) forwards that output pruned,
// with the target's line kept where it was; every earlier message or content
// reaches the upstream as it did in the request before, so the provider's
// prompt cache keeps hitting; a sizing request and a request without a page
// pass through byte for byte.
func TestCapturedAgentConversationsThroughTheGateway(t *testing.T) {
	for _, a := range capturedAgents {
		dirs, _ := filepath.Glob(filepath.Join("../../testdata/agents", a.agent, "*"))
		if len(dirs) == 0 {
			t.Fatalf("no captured conversations under testdata/agents/%s", a.agent)
		}
		for _, dir := range dirs {
			t.Run(a.agent+"/"+filepath.Base(dir), func(t *testing.T) {
				files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
				slices.Sort(files)
				up := newAnyUpstream(t)
				gw := startGateway(t, a.env(up.URL))
				var prev []byte
				pruned := 0
				for _, f := range files {
					name := filepath.Base(f)
					body, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					resp, err := http.Post(gw.URL+a.path(name), "application/json", bytes.NewReader(body))
					if err != nil {
						t.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					status := resp.Header.Get("X-Focusgate-Status")
					sent := up.next(t)
					if resp.StatusCode != http.StatusOK {
						t.Errorf("%s: HTTP %d", name, resp.StatusCode)
					}
					before, after := newestToolOutput(body), newestToolOutput(sent)
					switch {
					case strings.Contains(name, "count_tokens") || !strings.Contains(string(body), "ref=e"):
						if !bytes.Equal(sent, body) {
							t.Errorf("%s: a request without a page or a sizing request was changed (status %q)", name, status)
						}
						continue
					case !strings.Contains(before, "ref=e"):
						// The page is in an older output: it is re-applied.
					case !strings.HasPrefix(status, "pruned") || len(after) >= len(before):
						t.Errorf("%s: status %q, the newest tool output went from %d to %d bytes: want its page pruned", name, status, len(before), len(after))
					case placeOrder.MatchString(before) && !placeOrder.MatchString(after):
						t.Errorf("%s: the target's line was pruned away", name)
					case strings.Count(after, "ref=e") > 12:
						// Every part of the output is pruned: both halves of a
						// cut output, not only the one nearest the end.
						t.Errorf("%s: the newest tool output kept %d element refs of %d, want a few", name, strings.Count(after, "ref=e"), strings.Count(before, "ref=e"))
					}
					if strings.HasPrefix(status, "pruned") {
						pruned++
					}
					if prev != nil {
						checkTurnsPrefix(t, name, prev, sent)
					}
					prev = sent
				}
				if pruned == 0 {
					t.Error("no request was pruned")
				}
				// The goal is the user's task, not the agent's own context
				// (Gemini CLI's <session_context> part before it).
				up.mu.Lock()
				defer up.mu.Unlock()
				if len(up.goals) == 0 {
					t.Error("the retriever was never asked")
				}
				for _, g := range up.goals {
					if !strings.Contains(g, "click Place order") || strings.Contains(g, "session_context") {
						t.Errorf("the retriever's goal is %.300q, want the user's task", g)
					}
				}
			})
		}
	}
}

// newestToolOutput is the text of the newest tool output of a chat,
// Messages or Gemini body, its parts joined.
func newestToolOutput(body []byte) string {
	var out []string
	texts := func(c gjson.Result) []string {
		if c.Type == gjson.String {
			return []string{c.String()}
		}
		return stringsOfAll(c.Get("#.text"))
	}
	root := gjson.ParseBytes(body)
	root.Get("messages").ForEach(func(_, m gjson.Result) bool {
		if m.Get("role").String() == "tool" {
			out = texts(m.Get("content"))
		}
		if results := m.Get(`content.#(type=="tool_result")#.content`); len(results.Array()) > 0 {
			out = nil
			results.ForEach(func(_, c gjson.Result) bool { out = append(out, texts(c)...); return true })
		}
		return true
	})
	root.Get("contents").ForEach(func(_, c gjson.Result) bool {
		if r := c.Get("parts.#.functionResponse.response"); len(r.Array()) > 0 {
			out = nil
			r.ForEach(func(_, v gjson.Result) bool { out = append(out, v.Get("output").String()); return true })
		}
		return true
	})
	return strings.Join(out, "\n")
}

// stringsOfAll is the strings of a gjson array.
func stringsOfAll(r gjson.Result) []string {
	var out []string
	r.ForEach(func(_, v gjson.Result) bool { out = append(out, v.String()); return true })
	return out
}

// checkTurnsPrefix checks that the messages (chat, Messages) or contents
// (Gemini) forwarded in prev come back byte for byte at the head of next,
// Anthropic's cache_control markers aside (Claude Code moves its last one).
func checkTurnsPrefix(t *testing.T, name string, prev, next []byte) {
	t.Helper()
	field := "messages"
	if !gjson.GetBytes(prev, field).Exists() {
		field = "contents"
	}
	pm, nm := gjson.GetBytes(prev, field).Array(), gjson.GetBytes(next, field).Array()
	if len(nm) < len(pm) {
		t.Errorf("%s: the conversation shrank from %d to %d %s", name, len(pm), len(nm), field)
		return
	}
	marker := regexp.MustCompile(`,"cache_control":\{"type":"ephemeral"\}`)
	for i := range pm {
		if a, b := marker.ReplaceAllString(pm[i].Raw, ""), marker.ReplaceAllString(nm[i].Raw, ""); a != b {
			t.Errorf("%s: %s %d was forwarded differently than in the request before (%d vs %d bytes): the prompt cache misses from there on", name, field, i, len(a), len(b))
			return
		}
	}
}

// anyUpstream plays the action model and the retriever of every API: it
// keeps each action request's body and answers it with an empty success,
// and answers retriever calls (told apart by the retriever's instructions)
// with line 1 and the target's line, in the shape of the API they came in.
type anyUpstream struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	goals  []string // the goal of each retriever prompt
}

func newAnyUpstream(t *testing.T) *anyUpstream {
	t.Helper()
	u := &anyUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if !bytes.Contains(body, []byte("You work in front of a web agent")) {
			u.mu.Lock()
			u.bodies = append(u.bodies, body)
			u.mu.Unlock()
			io.WriteString(w, `{}`)
			return
		}
		var prompt strings.Builder
		for _, p := range []string{"messages.#.content", "contents.#.parts|@flatten|#.text"} {
			gjson.GetBytes(body, p).ForEach(func(_, v gjson.Result) bool { prompt.WriteString(v.String() + "\n"); return true })
		}
		_, goal, _ := strings.Cut(prompt.String(), "# Goal\n")
		goal, _, _ = strings.Cut(goal, "\n\n# ")
		u.mu.Lock()
		u.goals = append(u.goals, goal)
		u.mu.Unlock()
		ranges := []string{"(1,1)"}
		for _, line := range strings.Split(prompt.String(), "\n") {
			if sm := numberedLine.FindStringSubmatch(line); sm != nil && strings.Contains(line, `button "Place order"`) {
				ranges = append(ranges, "("+sm[1]+","+sm[1]+")")
			}
		}
		answer, _ := json.Marshal("<answer>[" + strings.Join(ranges, ", ") + "]</answer>")
		switch {
		case strings.Contains(r.URL.Path, ":generateContent"):
			fmt.Fprintf(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":%s}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":10,"totalTokenCount":110}}`, answer)
		case strings.HasSuffix(r.URL.Path, "/messages"):
			fmt.Fprintf(w, `{"id":"msg_r","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":%s}],"stop_reason":"end_turn","usage":{"input_tokens":100,"output_tokens":10}}`, answer)
		default:
			fmt.Fprintf(w, `{"id":"r","object":"chat.completion","created":1,"model":"gpt-4.1-mini","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`, answer)
		}
	}))
	t.Cleanup(u.Close)
	return u
}

// next is the body of the action request the gateway forwarded last; it
// fails the test when the gateway answered without forwarding.
func (u *anyUpstream) next(t *testing.T) []byte {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.bodies) == 0 {
		t.Fatal("the gateway answered without forwarding the request upstream")
	}
	b := u.bodies[len(u.bodies)-1]
	u.bodies = u.bodies[:0]
	return b
}
