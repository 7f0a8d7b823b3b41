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
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The requests real web-agent tools sent to the action model, captured by
// e2e/capture.mjs into testdata/agents/<tool>/<scenario>/NN-<endpoint>.json
// (see testdata/agents/README.md), replayed through the running gateway.
//
// Every request that holds a page snapshot must reach the action model pruned,
// with the element the agent's next action needs still there, and with every
// byte outside the observations exactly as the tool sent it. A request without
// a page must pass through byte for byte.
//
// The retriever must also be told the agent's goal and, in tool-calling loops,
// what the agent did before this page: the task in the first user message and
// the earlier tool calls, or Stagehand's instruction line.
var agentTools = []struct {
	tool string
	// page matches a request body that holds a page snapshot of this tool.
	page *regexp.Regexp
	// goal matches the goal the retriever is given for every page.
	goal *regexp.Regexp
	// history matches the history the retriever is given once the agent
	// has acted; nil where the tool sends no history (Stagehand).
	history *regexp.Regexp
}{
	{"playwright-mcp", regexp.MustCompile(`\[ref=[a-z0-9]+\]`),
		regexp.MustCompile(`add the Summit Parka 2000 to the cart`), regexp.MustCompile(`browser_navigate\(`)},
	{"openai-agents", regexp.MustCompile(`\[ref=[a-z0-9]+\]`),
		regexp.MustCompile(`add the Summit Parka 2000 to the cart`), regexp.MustCompile(`browser_navigate\(`)},
	{"stagehand", regexp.MustCompile(`\[0-\d+\] RootWebArea`),
		regexp.MustCompile(`'(Add to cart|First name|Summit Parka 2000)'`), nil},
	{"chrome-devtools-mcp", regexp.MustCompile(`uid=\d+_0 RootWebArea`),
		regexp.MustCompile(`add the Summit Parka 2000 to the cart`), regexp.MustCompile(`navigate_page\(`)},
}

// neededElement matches the tree line of an element the scripted agents act
// on, in each tool's syntax: Playwright MCP `button "Add to cart" [ref=e102]`,
// chrome-devtools-mcp `uid=1_117 button "Add to cart"`, Stagehand
// `[0-268] button: Add to cart`.
var neededElement = regexp.MustCompile(`(button|textbox)(: | ")(Add to cart|First name|Save Meadow Helmet 108)\b`)

func TestAgentRequestsArePrunedByteFaithfully(t *testing.T) {
	for _, tc := range agentTools {
		t.Run(tc.tool, func(t *testing.T) {
			scenarios, err := filepath.Glob(filepath.Join("../../testdata/agents", tc.tool, "*"))
			if err != nil {
				t.Fatal(err)
			}
			var dirs []string
			for _, s := range scenarios {
				if fi, err := os.Stat(s); err == nil && fi.IsDir() {
					dirs = append(dirs, s)
				}
			}
			if len(dirs) == 0 {
				t.Fatalf("no captured requests under testdata/agents/%s", tc.tool)
			}
			var total replayStats
			for _, dir := range dirs {
				t.Run(filepath.Base(dir), func(t *testing.T) {
					st := replayConversation(t, dir, tc.page, tc.goal, tc.history)
					total.add(st)
					t.Logf("%s: %s", filepath.Base(dir), st)
				})
			}
			t.Logf("%s total: %s", tc.tool, total)
		})
	}
}

// replayConversation posts every request of one captured conversation, in
// order, to a fresh gateway and checks what the action model received.
func replayConversation(t *testing.T, dir string, page, goal, history *regexp.Regexp) replayStats {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no requests in %s: %v", dir, err)
	}
	sort.Strings(files)
	retriever := newElementRetriever(t)
	upstream := newRecordingUpstream(t)
	gw := startGateway(t, map[string]string{
		"FOCUSGATE_UPSTREAM_URL":  upstream.URL + "/v1",
		"FOCUSGATE_RETRIEVER_URL": retriever.URL + "/v1",
	})
	var st replayStats
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		path := "/v1/chat/completions"
		if strings.Contains(filepath.Base(f), "responses") {
			path = "/v1/responses"
		}
		resp, err := http.Post(gw.URL+path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		name := filepath.Base(f)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: HTTP %d from the gateway", name, resp.StatusCode)
		}
		sent := upstream.next(t)
		st.requests++
		status := resp.Header.Get("X-Focusgate-Status")
		if !page.Match(body) {
			if !bytes.Equal(sent, body) {
				t.Errorf("%s: a request without a page snapshot was changed (status %q)", name, status)
			}
			continue
		}
		st.withPage++
		if !strings.HasPrefix(status, "pruned") {
			t.Errorf("%s: X-Focusgate-Status %q, want pruned: the page snapshot reached the action model in full", name, status)
			continue
		}
		st.pruned++
		seen := retriever.seen()
		checkObservationEdits(t, name, body, sent, seen)
		if last := seen[len(seen)-1]; !goal.MatchString(last.goal) {
			t.Errorf("%s: the retriever's goal %.200q does not match %s", name, last.goal, goal)
		} else if history != nil && !history.MatchString(last.history) {
			t.Errorf("%s: the retriever's history %.200q does not match %s", name, last.history, history)
		}
		st.addTokens(resp.Header)
		st.bytesBefore += len(body)
		st.bytesAfter += len(sent)
	}
	return st
}

// replayStats sums what a replay measured; reductions are means over the
// pruned requests.
type replayStats struct {
	requests, withPage, pruned int
	obsReduction               float64 // summed 1 - after/before of observation tokens
	bytesBefore, bytesAfter    int     // whole request bodies, pruned requests only
}

// addTokens adds the observation token reduction the gateway reported for
// one pruned request.
func (s *replayStats) addTokens(h http.Header) {
	before, _ := strconv.Atoi(h.Get("X-Focusgate-Tokens-Before"))
	after, _ := strconv.Atoi(h.Get("X-Focusgate-Tokens-After"))
	if before > 0 {
		s.obsReduction += 1 - float64(after)/float64(before)
	}
}

func (s *replayStats) add(o replayStats) {
	s.requests += o.requests
	s.withPage += o.withPage
	s.pruned += o.pruned
	s.obsReduction += o.obsReduction
	s.bytesBefore += o.bytesBefore
	s.bytesAfter += o.bytesAfter
}

func (s replayStats) String() string {
	obs, whole := 0.0, 0.0
	if s.pruned > 0 {
		obs = s.obsReduction / float64(s.pruned)
	}
	if s.bytesBefore > 0 {
		whole = 1 - float64(s.bytesAfter)/float64(s.bytesBefore)
	}
	return fmt.Sprintf("%d requests, %d with a page, %d pruned; mean observation token reduction %.1f%%, whole-request byte reduction %.1f%%",
		s.requests, s.withPage, s.pruned, 100*obs, 100*whole)
}

// checkObservationEdits asserts that sent differs from orig only inside
// observations the retriever was shown, and that the newest rewritten
// observation still holds the element lines the retriever kept.
func checkObservationEdits(t *testing.T, name string, orig, sent []byte, trees []retrieved) {
	t.Helper()
	type span struct {
		start, end int
		tree       retrieved
	}
	var spans []span
	for _, tr := range trees {
		for _, enc := range [][]byte{jsonEscape(tr.text), jsonEscape(string(jsonEscape(tr.text)))} {
			for off := 0; ; {
				i := bytes.Index(orig[off:], enc)
				if i < 0 {
					break
				}
				spans = append(spans, span{off + i, off + i + len(enc), tr})
				off += i + len(enc)
			}
		}
	}
	if len(spans) == 0 {
		t.Errorf("%s: none of the %d trees the retriever was shown occurs in the request (JSON-escaped once or twice)", name, len(trees))
		return
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	merged := spans[:1]
	for _, s := range spans[1:] {
		if last := &merged[len(merged)-1]; s.start < last.end {
			if s.end > last.end {
				last.end, last.tree = s.end, s.tree
			}
			continue
		}
		merged = append(merged, s)
	}
	// Walk orig and sent together: every gap between observations must
	// appear unchanged and in order; what stands between two gaps in sent is
	// the forwarded form of the observation between them in orig.
	var newest *span
	var newestRepl []byte
	pos, sPos := 0, 0
	for i := range merged {
		sp := &merged[i]
		gap := orig[pos:sp.start]
		if !bytes.HasPrefix(sent[sPos:], gap) {
			t.Errorf("%s: bytes before observation %d changed: want %q, got %q", name, i+1, clip(gap), clip(sent[sPos:]))
			return
		}
		sPos += len(gap)
		nextStart := len(orig)
		if i+1 < len(merged) {
			nextStart = merged[i+1].start
		}
		after := orig[sp.end:nextStart]
		var end int
		if i+1 == len(merged) {
			if !bytes.HasSuffix(sent[sPos:], after) {
				t.Errorf("%s: bytes after the last observation changed: want %q, got %q", name, clip(after), clip(sent[sPos:]))
				return
			}
			end = len(sent) - len(after)
		} else {
			j := bytes.Index(sent[sPos:], after)
			if j < 0 || len(after) == 0 {
				t.Errorf("%s: bytes between observations %d and %d not found unchanged in the forwarded body", name, i+1, i+2)
				return
			}
			end = sPos + j
		}
		repl := sent[sPos:end]
		if !bytes.Equal(repl, orig[sp.start:sp.end]) {
			newest, newestRepl = sp, repl
		}
		sPos, pos = end, sp.end
	}
	if newest == nil {
		t.Errorf("%s: status pruned, but every observation was forwarded unchanged", name)
		return
	}
	if len(newest.tree.kept) == 0 {
		t.Errorf("%s: the retriever found no element line the next action needs in the tree it was shown", name)
	}
	for _, line := range newest.tree.kept {
		if !bytes.Contains(newestRepl, jsonEscape(line)) && !bytes.Contains(newestRepl, jsonEscape(string(jsonEscape(line)))) {
			t.Errorf("%s: the pruned observation lost the element line %q", name, line)
		}
	}
}

func clip(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "..."
	}
	return string(b)
}

// jsonEscape returns s as it stands inside a JSON string written by
// JavaScript's JSON.stringify, which is what every captured tool sends.
func jsonEscape(s string) []byte {
	var b bytes.Buffer
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	return b.Bytes()
}

// retrieved is one tree the scripted retriever was shown, with the element
// lines it kept.
type retrieved struct {
	text          string
	kept          []string
	goal, history string // the prompt's goal and history sections
}

// elementRetriever plays the retriever model: it reads the numbered tree
// from the gateway's prompt and keeps the first line and every line of an
// element the scripted agents act on.
type elementRetriever struct {
	*httptest.Server
	mu    sync.Mutex
	trees []retrieved
	calls int
}

var numberedLine = regexp.MustCompile(`^ {0,3}(\d+) `)

func newElementRetriever(t *testing.T) *elementRetriever {
	t.Helper()
	r := &elementRetriever{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(io.LimitReader(req.Body, 64<<20)).Decode(&body); err != nil || len(body.Messages) == 0 {
			http.Error(w, "bad retriever request", http.StatusBadRequest)
			return
		}
		prompt := body.Messages[len(body.Messages)-1].Content
		head, _, _ := strings.Cut(prompt, "\n\n# Page snapshot (")
		goal, history, _ := strings.Cut(strings.TrimPrefix(head, "# Goal\n"), "\n\n# What the agent did so far\n")
		_, numbered, ok := strings.Cut(prompt, " lines)\n")
		numbered, _, _ = strings.Cut(numbered, "\n\nWhich lines does the agent need")
		if !ok {
			http.Error(w, "no numbered tree in the prompt", http.StatusBadRequest)
			return
		}
		var tree strings.Builder
		var kept []string
		ranges := []string{"(1,1)"}
		for i, line := range strings.Split(numbered, "\n") {
			if i > 0 {
				tree.WriteByte('\n')
			}
			if len(line) >= 5 {
				tree.WriteString(line[5:])
			}
			m := numberedLine.FindStringSubmatch(line)
			if m != nil && len(line) > 5 && neededElement.MatchString(line[5:]) {
				ranges = append(ranges, "("+m[1]+","+m[1]+")")
				kept = append(kept, line[5:])
			}
		}
		r.mu.Lock()
		r.trees = append(r.trees, retrieved{text: tree.String(), kept: kept, goal: goal, history: history})
		r.calls++
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		answer := "<answer>[" + strings.Join(ranges, ", ") + "]</answer>"
		fmt.Fprintf(w, `{"id":"r","object":"chat.completion","created":1,"model":"gpt-4.1-mini","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`, answer)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *elementRetriever) seen() []retrieved {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]retrieved(nil), r.trees...)
}

func (r *elementRetriever) callCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// recordingUpstream plays the action model for replayed requests: it keeps
// each body it receives and answers with an empty JSON object.
type recordingUpstream struct {
	*httptest.Server
	bodies chan []byte
}

func newRecordingUpstream(t *testing.T) *recordingUpstream {
	t.Helper()
	u := &recordingUpstream{bodies: make(chan []byte, 64)}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.bodies <- b
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *recordingUpstream) next(t *testing.T) []byte {
	t.Helper()
	select {
	case b := <-u.bodies:
		return b
	default:
		t.Fatal("the gateway answered without forwarding the request upstream")
		return nil
	}
}
