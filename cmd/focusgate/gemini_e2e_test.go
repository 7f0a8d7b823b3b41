//go:build e2e

package main

import (
	"bytes"
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

// geminiMethod matches a Gemini API model call: the model and the method.
var geminiMethod = regexp.MustCompile(`/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)$`)

// scriptedGemini plays Google's Gemini API for a real Gemini CLI run through
// the gateway: the action model, which drives Playwright MCP (navigate,
// snapshot, a click on the ref it READ in the snapshot it was sent; when
// Gemini CLI cut the snapshot, it first reads the start of the saved whole
// with read_file), and the Gemini retriever the gateway asks, told apart by
// its system instruction, which keeps the root and the target's line.
type scriptedGemini struct {
	*httptest.Server
	page   string
	target *regexp.Regexp // the target's line; its ref is the first group
	mu     sync.Mutex
	action []geminiCall // the action model's requests (countTokens too) as they arrived
	trees  []string     // the numbered trees the retriever was shown
	// clicked is the ref the click named, lost says a snapshot reached the
	// model without the target, and clickResult is Playwright MCP's answer
	// to the click as the model got it.
	clicked, clickResult string
	lost                 bool
	chunk                string // the start of a cut snapshot's file as read_file gave it to the model
}

// geminiSaved is Gemini CLI's header above an output it cut, naming the file
// that holds the whole output.
var geminiSaved = regexp.MustCompile(`^Output too large\. Showing first [\d,]+ and last [\d,]+ characters\. For full output see: (\S+)`)

// geminiChunk is how many lines of a saved output the model reads back.
const geminiChunk = 400

type geminiCall struct {
	path, key string // the URL path and query, the x-goog-api-key header
	body      []byte
}

func newScriptedGemini(t *testing.T, page string, target *regexp.Regexp) *scriptedGemini {
	t.Helper()
	m := &scriptedGemini{page: page, target: target}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

func (m *scriptedGemini) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	call := geminiMethod.FindStringSubmatch(r.URL.Path)
	if r.Method != http.MethodPost || call == nil {
		http.Error(w, `{"error":{"code":404,"message":"not a Gemini model call","status":"NOT_FOUND"}}`, http.StatusNotFound)
		return
	}
	if strings.Contains(gjson.GetBytes(body, "systemInstruction").Raw, "You work in front of a web agent") {
		m.retrieve(w, body)
		return
	}
	m.mu.Lock()
	m.action = append(m.action, geminiCall{path: r.URL.RequestURI(), key: r.Header.Get("X-Goog-Api-Key"), body: body})
	m.mu.Unlock()
	if call[2] == "countTokens" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"totalTokens":1000}`)
		return
	}
	part := m.next(body)
	answer, _ := json.Marshal(map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]int{"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
		"modelVersion":  call[1],
	})
	if call[2] == "generateContent" {
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: %s\r\n\r\n", answer)
}

// next is the scripted model's next part: a function call by the number of
// calls so far, or a final text.
func (m *scriptedGemini) next(body []byte) map[string]any {
	tool := func(suffix string) string {
		name := ""
		gjson.GetBytes(body, "tools.#.functionDeclarations|@flatten.#.name").ForEach(func(_, n gjson.Result) bool {
			if strings.HasSuffix(n.String(), suffix) {
				name = n.String()
			}
			return true
		})
		return name
	}
	calls := gjson.GetBytes(body, "contents.#.parts|@flatten|#.functionCall").Array()
	responses := gjson.GetBytes(body, "contents.#.parts|@flatten|#.functionResponse.response").Array()
	call := func(name string, args map[string]any) map[string]any {
		return map[string]any{"functionCall": map[string]any{"name": name, "args": args}}
	}
	say := func(text string) map[string]any { return map[string]any{"text": text} }
	if tool("browser_navigate") == "" {
		return say("Nothing to do here.") // a side request without the browser's tools
	}
	last := ""
	if len(responses) > 0 {
		last = responses[len(responses)-1].Get("output").String()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	lastCall := ""
	if len(calls) > 0 {
		lastCall = calls[len(calls)-1].Get("name").String()
	}
	switch {
	case len(calls) == 0:
		return call(tool("browser_navigate"), map[string]any{"url": m.page})
	case len(calls) == 1:
		return call(tool("browser_snapshot"), map[string]any{})
	case strings.HasSuffix(lastCall, "browser_snapshot") || lastCall == "read_file":
		if saved := geminiSaved.FindStringSubmatch(last); saved != nil {
			// Gemini CLI cut the snapshot: read the start of the whole
			// output back from the file it names.
			return call("read_file", map[string]any{"file_path": saved[1], "start_line": 1, "end_line": geminiChunk})
		}
		if lastCall == "read_file" {
			m.chunk = last
		}
		// The target's ref as the model read it in any output it was sent.
		var outputs []string
		for _, r := range responses {
			outputs = append(outputs, r.Get("output").String())
		}
		sm := m.target.FindStringSubmatch(strings.Join(outputs, "\n"))
		if sm == nil {
			m.lost = true
			return say("The page I was shown has no such button.")
		}
		m.clicked = sm[1]
		return call(tool("browser_click"), map[string]any{"element": "Place order button", "target": sm[1]})
	case strings.HasSuffix(lastCall, "browser_click"):
		m.clickResult = responses[len(responses)-1].Raw
	}
	return say("Done: the order is placed.")
}

// retrieve answers the gateway's retriever call (generateContent): line 1
// and the target's.
func (m *scriptedGemini) retrieve(w http.ResponseWriter, body []byte) {
	var prompt strings.Builder
	gjson.GetBytes(body, "contents.#.parts|@flatten.#.text").ForEach(func(_, p gjson.Result) bool {
		prompt.WriteString(p.String())
		return true
	})
	ranges := []string{"(1,1)"}
	for _, line := range strings.Split(prompt.String(), "\n") {
		if sm := numberedLine.FindStringSubmatch(line); sm != nil && m.target.MatchString(line) {
			ranges = append(ranges, "("+sm[1]+","+sm[1]+")")
		}
	}
	m.mu.Lock()
	m.trees = append(m.trees, prompt.String())
	m.mu.Unlock()
	answer, _ := json.Marshal("<answer>[" + strings.Join(ranges, ", ") + "]</answer>")
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":%s}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":10,"totalTokenCount":110},"modelVersion":"gemini-2.5-flash-lite"}`, answer)
}

// geminiSettings is ~/.gemini/settings.json for a headless run with an API
// key (without selectedType, Gemini CLI 0.61.0 exits 41) and Playwright MCP.
func geminiSettings(t *testing.T, node, modules, chromium, home string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeJSONFile(filepath.Join(home, ".gemini", "settings.json"), map[string]any{
		"security":   map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"general":    map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		"privacy":    map[string]any{"usageStatisticsEnabled": false},
		"telemetry":  map[string]any{"enabled": false},
		"mcpServers": map[string]any{"playwright": playwrightTools.server(node, modules, chromium, home)},
	})
}

// The real Gemini CLI (the pinned @google/gemini-cli), pointed at the gateway
// with GOOGLE_GEMINI_BASE_URL and nothing else, drives Playwright MCP against
// a local page: its snapshot reaches the model pruned with the target kept,
// the click lands on the ref the model read there, and every byte outside the
// page reaches the upstream as the CLI sent it. On the catalogue page, whose
// snapshot (180 KB) is over Gemini CLI's 40,000 characters, the CLI keeps the
// first 8,000 and the last 32,000 characters around a
// "... [N characters omitted] ..." line: the halves are pruned, the line stays.
//
// FOCUSGATE_E2E_CAPTURE=DIR writes each body the CLI sent into
// DIR/<case>/NN-<method>.json (see testdata/agents/README.md).
func TestGeminiCLIRunsThroughTheGateway(t *testing.T) {
	node, modules, chromium := e2eRequirements(t)
	gemini := e2eBin(t, modules, "gemini", "Gemini CLI")
	small := httptest.NewServer(http.FileServer(http.Dir("../../e2e/pages")))
	t.Cleanup(small.Close)
	big := httptest.NewServer(http.FileServer(http.Dir(bigPage(t))))
	t.Cleanup(big.Close)
	for _, tc := range []struct {
		name, page string
		truncated  bool // the snapshot is over Gemini CLI's 40,000 characters
	}{
		{"playwright-mcp-form", small.URL + "/form.html", false},
		{"playwright-mcp-catalogue", big.URL + "/catalogue.html", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := newScriptedGemini(t, tc.page, playwrightTools.target)
			gw := startGateway(t, map[string]string{"FOCUSGATE_GEMINI_URL": model.URL})
			front := newClientRecorder(t, gw.URL)
			base := front.URL
			if os.Getenv("FOCUSGATE_E2E_DIRECT") == "1" {
				base = model.URL // capture what the CLI sends with no gateway at all
			}

			home := agentHome(t)
			work := filepath.Join(home, "work")
			if err := os.MkdirAll(work, 0o700); err != nil {
				t.Fatal(err)
			}
			geminiSettings(t, node, modules, chromium, home)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, gemini, "-p", "Open "+tc.page+" in the browser and click Place order.",
				"-m", "gemini-2.5-flash", "--yolo")
			cmd.Dir = work
			cmd.Env = []string{
				"HOME=" + home, "PATH=" + filepath.Dir(node) + ":" + os.Getenv("PATH"),
				"GOOGLE_GEMINI_BASE_URL=" + base, "GEMINI_API_KEY=gemini-e2e-not-a-real-key",
				"GEMINI_CLI_TRUST_WORKSPACE=true", "NO_COLOR=1",
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("gemini: %v\n%s", err, tail(string(out), 3000))
			}
			if !strings.Contains(string(out), "Done: the order is placed.") {
				t.Errorf("Gemini CLI did not finish:\n%s", tail(string(out), 2000))
			}
			model.mu.Lock()
			clicked, lost, clickResult := model.clicked, model.lost, model.clickResult
			action, trees := model.action, model.trees
			model.mu.Unlock()
			if lost || clicked == "" {
				t.Fatalf("the model never saw the target in its snapshot (lost %v): pruning hid it\n%s", lost, tail(string(out), 1000))
			}
			if !strings.Contains(clickResult, "Place order") || strings.Contains(clickResult, `"error"`) {
				t.Errorf("the click on %s did not land: %.300s", clicked, clickResult)
			}
			sent, answers := front.sent()
			if base == model.URL {
				sent = nil
				for _, c := range action {
					sent = append(sent, c.body)
				}
			}
			if dir := os.Getenv("FOCUSGATE_E2E_CAPTURE"); dir != "" && len(sent) == len(action) {
				for k, c := range action {
					method := geminiMethod.FindStringSubmatch(strings.SplitN(c.path, "?", 2)[0])[2]
					captureBody(t, filepath.Join(dir, tc.name, fmt.Sprintf("%02d-%s.json", k+1, method)), sent[k], geminiVendorText)
				}
			}
			if base == model.URL {
				t.Skip("FOCUSGATE_E2E_DIRECT=1: the CLI talked to the fake upstream directly")
			}

			if len(sent) != len(action) {
				t.Fatalf("the CLI sent %d requests, the upstream received %d", len(sent), len(action))
			}
			pruned := 0
			for k := range sent {
				status := answers[k].Get("X-Focusgate-Status")
				if action[k].key != "gemini-e2e-not-a-real-key" {
					t.Errorf("request %d reached the upstream with x-goog-api-key %q, want the client's", k, action[k].key)
				}
				snapshot := playwrightTools.target.Match(bytes.ReplaceAll(sent[k], []byte(`\"`), []byte(`"`)))
				if !snapshot {
					if !bytes.Equal(action[k].body, sent[k]) {
						t.Errorf("request %d: a request without a page snapshot was changed (status %q)", k, status)
					}
					continue
				}
				if !strings.HasPrefix(status, "pruned") {
					t.Errorf("request %d: X-Focusgate-Status %q, want pruned: the snapshot reached the model whole", k, status)
					continue
				}
				pruned++
				checkGeminiPruned(t, k, sent[k], action[k].body)
			}
			if tc.truncated {
				model.mu.Lock()
				chunk := model.chunk
				model.mu.Unlock()
				if refs := strings.Count(chunk, "[ref="); chunk == "" || refs > 12 {
					t.Errorf("the start of the saved snapshot reached the model with %d element refs (read: %v), want it read and pruned to a few", refs, chunk != "")
				}
			}
			if pruned == 0 {
				t.Errorf("no request of %d was pruned", len(sent))
			}
			for k := 0; k+1 < len(action); k++ {
				checkGeminiPrefix(t, k, action[k].body, action[k+1].body)
			}
			// One call per tree the model is shown (the two halves of a cut
			// snapshot, then the chunk read back); later requests re-apply
			// the selections.
			if want := map[bool]int{false: 1, true: 3}[tc.truncated]; len(trees) != want {
				t.Errorf("the retriever was asked %d times, want %d", len(trees), want)
			}
			t.Logf("%d requests, %d pruned, %d retriever calls, click on %s", len(sent), pruned, len(trees), clicked)
		})
	}
}

// checkGeminiPruned checks one pruned request against the body the CLI sent:
// its system instruction, tools and generation settings are the same bytes
// and, when the newest function response holds a page, that response is
// smaller, changed only inside its output string, and keeps the target's
// line and what Gemini CLI wrapped the page in (its <untrusted_context>, the
// header and omission line of a cut output, read_file's status lines). Older
// contents are checked by checkGeminiPrefix.
func checkGeminiPruned(t *testing.T, k int, orig, sent []byte) {
	t.Helper()
	for _, field := range []string{"systemInstruction", "tools", "generationConfig"} {
		if a, b := gjson.GetBytes(orig, field).Raw, gjson.GetBytes(sent, field).Raw; a != b {
			t.Errorf("request %d: %s changed", k, field)
		}
	}
	oc, sc := gjson.GetBytes(orig, "contents").Array(), gjson.GetBytes(sent, "contents").Array()
	if len(oc) != len(sc) {
		t.Fatalf("request %d: %d contents sent, %d forwarded", k, len(oc), len(sc))
	}
	const out = "parts.0.functionResponse.response.output"
	newest := len(oc) - 1
	before, after := oc[newest].Get(out).String(), sc[newest].Get(out).String()
	if !strings.Contains(before, "[ref=") {
		if oc[newest].Raw != sc[newest].Raw {
			t.Errorf("request %d: the newest content holds no page, yet it changed", k)
		}
		return // an older page re-applied
	}
	// Outside the output string, the content is byte for byte the same.
	ob, sb := oc[newest].Raw, sc[newest].Raw
	oo, so := oc[newest].Get(out).Raw, sc[newest].Get(out).Raw
	if i, j := strings.Index(ob, oo), strings.Index(sb, so); i < 0 || j < 0 || ob[:i] != sb[:j] || ob[i+len(oo):] != sb[j+len(so):] {
		t.Errorf("request %d: the newest content changed outside its function response's output", k)
	}
	if len(after) >= len(before) {
		t.Errorf("request %d: the output was not made smaller (%d to %d chars)", k, len(before), len(after))
	}
	if playwrightTools.target.MatchString(before) && !playwrightTools.target.MatchString(after) {
		t.Errorf("request %d: the target's line was pruned away", k)
	}
	if refs := strings.Count(after, "[ref="); refs > 12 {
		t.Errorf("request %d: the output kept %d element refs of %d, want a few", k, refs, strings.Count(before, "[ref="))
	}
	keep := []string{"<untrusted_context>\n", "\n</untrusted_context>", "### Snapshot\n```yaml\n"}
	if m := geminiSaved.FindString(before); m != "" {
		keep = append(keep, m, regexp.MustCompile(`\n\.\.\. \[[\d,]+ characters omitted\] \.\.\.\n`).FindString(before))
	}
	if head, _, ok := strings.Cut(before, "--- FILE CONTENT (truncated) ---\n"); ok {
		keep = append(keep, head+"--- FILE CONTENT (truncated) ---\n")
	}
	for _, s := range keep {
		if strings.Contains(before, s) && !strings.Contains(after, s) {
			t.Errorf("request %d: the pruned output lost %q", k, s)
		}
	}
}

// checkGeminiPrefix checks that every content the upstream received in one
// request comes back byte for byte in the next: Gemini's implicit prompt
// cache hits on the longest common prefix.
func checkGeminiPrefix(t *testing.T, k int, prev, next []byte) {
	t.Helper()
	pc, nc := gjson.GetBytes(prev, "contents").Array(), gjson.GetBytes(next, "contents").Array()
	if len(nc) < len(pc) {
		t.Errorf("request %d: the conversation shrank from %d to %d contents", k+1, len(pc), len(nc))
		return
	}
	for i := range pc {
		if pc[i].Raw != nc[i].Raw {
			t.Errorf("content %d of request %d reached the upstream changed in request %d: the prompt cache misses from there on", i, k, k+1)
			return
		}
	}
}

// geminiVendorText says which strings of a Gemini CLI body are Google's own
// prose: the system instruction and the tools' descriptions.
func geminiVendorText(path []string, _ string) (string, bool) {
	return "", path[0] == "systemInstruction" && path[len(path)-1] == "text" ||
		path[0] == "tools" && path[len(path)-1] == "description"
}

// captureBody writes a body a tool sent into the captures with the vendor's
// prose removed: each string value for which vendor says so becomes
// "[vendor text removed: N chars]" (N in characters), or the replacement
// vendor returns, and every other byte stays as it was sent.
func captureBody(t *testing.T, file string, body []byte, vendor func(path []string, s string) (string, bool)) {
	t.Helper()
	type cut struct {
		at, n int
		with  []byte
	}
	var cuts []cut
	var walk func(path []string, v gjson.Result)
	walk = func(path []string, v gjson.Result) {
		v.ForEach(func(k, child gjson.Result) bool {
			p := append(path[:len(path):len(path)], k.String())
			if child.Type == gjson.String {
				if repl, ok := vendor(p, child.String()); ok {
					if repl == "" {
						repl = removed(child.String())
					}
					with, _ := json.Marshal(repl)
					cuts = append(cuts, cut{child.Index, len(child.Raw), with})
				}
			} else if child.IsObject() || child.IsArray() {
				walk(p, child)
			}
			return true
		})
	}
	walk(nil, gjson.ParseBytes(body))
	out := append([]byte(nil), body...)
	for i := len(cuts) - 1; i >= 0; i-- {
		c := cuts[i]
		out = append(out[:c.at:c.at], append(c.with, out[c.at+c.n:]...)...)
	}
	if !gjson.ValidBytes(out) {
		t.Fatalf("%s: the redacted body is not JSON", file)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// removed is what stands in a capture for vendor prose s.
func removed(s string) string {
	return fmt.Sprintf("[vendor text removed: %d chars]", len([]rune(s)))
}
