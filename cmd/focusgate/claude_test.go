package main

import (
	"bufio"
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

// fakeAnthropic plays both Anthropic models a Claude Code user's gateway
// talks to with only an Anthropic key: the action model (Claude Code's
// streamed requests, answered with a short SSE stream) and the Claude
// retriever (focusgate's own non-streamed requests, told apart by their
// system prompt), which keeps line 1 and the lines of the element named
// target.
type fakeAnthropic struct {
	*httptest.Server
	mu        sync.Mutex
	action    [][]byte // bodies of the action model's requests, in order
	retriever []string // the retriever's user prompts
	keys      []string // x-api-key of every request
}

func newFakeAnthropic(t *testing.T, target *regexp.Regexp) *fakeAnthropic {
	t.Helper()
	f := &fakeAnthropic{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.keys = append(f.keys, r.Header.Get("X-Api-Key"))
		f.mu.Unlock()
		if r.URL.Path != "/v1/messages" {
			http.Error(w, "unexpected path "+r.URL.Path, http.StatusNotFound)
			return
		}
		if system := gjson.GetBytes(body, "system").String(); strings.HasPrefix(system, "You work in front of a web agent") {
			prompt := gjson.GetBytes(body, "messages.0.content").String()
			f.mu.Lock()
			f.retriever = append(f.retriever, prompt)
			f.mu.Unlock()
			ranges := []string{"(1,1)"}
			for _, line := range strings.Split(prompt, "\n") {
				if m := numberedLine.FindStringSubmatch(line); m != nil && target.MatchString(line) {
					ranges = append(ranges, "("+m[1]+","+m[1]+")")
				}
			}
			answer, _ := json.Marshal("<answer>[" + strings.Join(ranges, ", ") + "]</answer>")
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"msg_r","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":%s}],"stop_reason":"end_turn","usage":{"input_tokens":100,"output_tokens":10}}`, answer)
			return
		}
		f.mu.Lock()
		f.action = append(f.action, body)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9}}}\n\n")
		w.(http.Flusher).Flush()
		io.WriteString(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	t.Cleanup(f.Close)
	return f
}

// Claude Code's captured conversations, replayed through a gateway that
// has only an Anthropic key: every page snapshot reaches the action model
// pruned by a Claude retriever with the element the next action needs kept,
// cache_control markers stay on the blocks that carried them, each request
// forwards the earlier ones' messages byte for byte, and the answers stream
// back as the upstream sent them.
func TestClaudeCodeConversationsThroughTheGateway(t *testing.T) {
	// The button's line in each tool's syntax; the task's text names it
	// too, so the check looks for the element itself.
	target := regexp.MustCompile(`button "Save employee"`)
	for _, scenario := range []string{"playwright-mcp-admin", "chrome-devtools-mcp-admin", "agent-browser-admin"} {
		t.Run(scenario, func(t *testing.T) {
			dir := filepath.Join("../../testdata/agents/claude-code", scenario)
			files, _ := filepath.Glob(filepath.Join(dir, "*-messages-stream.json"))
			slices.Sort(files)
			if len(files) == 0 {
				t.Fatal("no captured requests")
			}
			claude := newFakeAnthropic(t, target)
			gw := startGateway(t, map[string]string{
				"FOCUSGATE_ANTHROPIC_URL":     claude.URL,
				"FOCUSGATE_ANTHROPIC_API_KEY": "sk-ant-team",
			})
			var sent [][]byte
			pruned := 0
			for _, f := range files {
				body, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				req, _ := http.NewRequest(http.MethodPost, gw.URL+"/v1/messages?beta=true", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Anthropic-Version", "2023-06-01")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				events := readEvents(t, resp)
				status := resp.Header.Get("X-Focusgate-Status")
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !slices.Equal(events, []string{"message_start", "message_stop"}) {
					t.Fatalf("%s: status %d, events %v", filepath.Base(f), resp.StatusCode, events)
				}
				claude.mu.Lock()
				forwarded := claude.action[len(claude.action)-1]
				claude.mu.Unlock()
				sent = append(sent, forwarded)
				if strings.HasPrefix(status, "pruned") {
					pruned++
					checkPrunedSnapshot(t, filepath.Base(f), body, forwarded, target)
				} else if !bytes.Equal(forwarded, body) {
					t.Errorf("%s (%s): a request without a page was changed", filepath.Base(f), status)
				}
			}
			if pruned == 0 {
				t.Fatal("no request was pruned")
			}
			for i := 1; i < len(sent); i++ {
				checkTurnsPrefix(t, fmt.Sprint("request ", i+1), sent[i-1], sent[i])
			}
			claude.mu.Lock()
			defer claude.mu.Unlock()
			if len(claude.retriever) != 1 {
				t.Errorf("%d retriever calls, want one for the one page (later requests re-apply it)", len(claude.retriever))
			}
			for _, k := range claude.keys {
				if k != "sk-ant-team" {
					t.Errorf("a request reached Anthropic with x-api-key %q, want the team's key", k)
				}
			}
		})
	}
}

// readEvents returns the event names of an SSE stream.
func readEvents(t *testing.T, resp *http.Response) []string {
	t.Helper()
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			events = append(events, name)
		}
	}
	return events
}

// checkPrunedSnapshot checks a pruned request against the one the client
// sent: smaller, still the target's line, and every cache_control marker in
// the same place.
func checkPrunedSnapshot(t *testing.T, name string, orig, sent []byte, target *regexp.Regexp) {
	// target is a literal: the element's line as the page shows it.
	t.Helper()
	if len(sent) >= len(orig) {
		t.Errorf("%s: pruned, yet %d bytes of %d", name, len(sent), len(orig))
	}
	// The body holds the line JSON-escaped.
	if escaped, _ := json.Marshal(target.String()); !bytes.Contains(sent, escaped[1:len(escaped)-1]) {
		t.Errorf("%s: the target element was pruned away", name)
	}
	if got, want := cacheControlPaths(sent), cacheControlPaths(orig); !slices.Equal(got, want) {
		t.Errorf("%s: cache_control at %v, the client had them at %v", name, got, want)
	}
}

// cacheControlPaths lists where a Messages body carries cache_control.
func cacheControlPaths(body []byte) []string {
	var paths []string
	var walk func(path string, v gjson.Result)
	walk = func(path string, v gjson.Result) {
		v.ForEach(func(k, child gjson.Result) bool {
			p := path + "." + k.String()
			if k.String() == "cache_control" {
				paths = append(paths, p)
			} else if child.IsObject() || child.IsArray() {
				walk(p, child)
			}
			return true
		})
	}
	walk("", gjson.ParseBytes(body).Get("messages"))
	walk("system", gjson.ParseBytes(body).Get("system"))
	return paths
}
