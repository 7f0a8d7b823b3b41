//go:build e2e

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// bigPage writes a catalogue of a thousand rows with the order button after
// them into a new directory: its snapshot (180 KB) is far over what Claude
// Code keeps inline.
func bigPage(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Catalogue – Trailhead Outfitters</title></head><body><h1>Catalogue</h1><ul>`)
	kinds := []string{"Alpine Jacket", "Harbor Boots", "Summit Backpack", "Cedar Tent", "Nova Lantern", "Drift Bottle"}
	for i := range 1000 {
		fmt.Fprintf(&b, "<li><a href=\"/p/%d\">%s, model %d, size %c</a> <button>Add item %d to cart</button></li>\n", i, kinds[i%len(kinds)], i, "SML"[i%3], i)
	}
	b.WriteString(`</ul><form><label>Promo code <input name="promo"></label><button type="button">Place order</button></form></body></html>`)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "catalogue.html"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

var (
	// savedOutput is Claude Code's preview of a tool output it saved to a
	// file, as the model reads it.
	savedOutput = regexp.MustCompile(`<persisted-output>\nOutput too large \([^)]*\)\. Full output saved to: (\S+)\n`)
	// snapshotLink is Playwright MCP's link to the snapshot it wrote to a
	// file after a navigation.
	snapshotLink = regexp.MustCompile(`\[Snapshot\]\((\S+\.yml)\)`)
	readLine     = regexp.MustCompile(`(?m)^(\d+)\t(.*)$`)
)

// chunkLines is how many lines the scripted model asks Read for at a time.
const chunkLines = 1000

// bigReader plays the model on a page too large to be shown inline: it reads
// Playwright MCP's snapshot file back in numbered chunks until one holds the
// target, then takes a snapshot, which Claude Code saves to a JSON file and
// previews, reads that file back, and clicks the ref it read there. It checks
// every numbered line it is sent against the file on disk.
type bigReader struct {
	m                 *scriptedClaude
	dir               string // Claude Code's working directory
	mu                sync.Mutex
	chunks            []int    // lines received in each chunk of the snapshot file
	bad               []string // numbered lines that differ from the file
	fromYML, fromJSON string   // the target's ref as read in each file
	jsonRefs          int      // element refs in the saved output as the model got it
	clicked           bool     // Playwright MCP reported the click
}

func (r *bigReader) next(body []byte) (name, input string) {
	if !gjson.GetBytes(body, `tools.#(name=="ToolSearch")`).Exists() {
		return "", "Nothing to do here." // Claude Code's side requests
	}
	var calls []gjson.Result
	result := ""
	gjson.GetBytes(body, "messages").ForEach(func(_, msg gjson.Result) bool {
		msg.Get("content").ForEach(func(_, block gjson.Result) bool {
			switch block.Get("type").String() {
			case "tool_use":
				calls = append(calls, block)
			case "tool_result":
				if c := block.Get("content"); c.Type == gjson.String {
					result = c.String()
				} else {
					var parts []string
					c.Get("#.text").ForEach(func(_, p gjson.Result) bool { parts = append(parts, p.String()); return true })
					result = strings.Join(parts, "\n")
				}
			}
			return true
		})
		return true
	})
	load := func(tool string) (string, string) {
		return "ToolSearch", `{"query":"select:` + tool + `","max_results":5}`
	}
	read := func(path string, offset int) (string, string) {
		in, _ := json.Marshal(map[string]any{"file_path": path, "offset": offset, "limit": chunkLines})
		return "Read", string(in)
	}
	tl := playwrightTools
	if len(calls) == 0 {
		return load(tl.navigate)
	}
	last := calls[len(calls)-1]
	name, in := last.Get("name").String(), last.Get("input")
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case name == "ToolSearch" && strings.HasSuffix(in.Get("query").String(), tl.navigate):
		return tl.navigate, fmt.Sprintf(tl.navigateInput, r.m.page)
	case name == tl.navigate:
		link := snapshotLink.FindStringSubmatch(result)
		if link == nil {
			return "", "The navigation gave no snapshot file."
		}
		return read(filepath.Join(r.dir, link[1]), 1)
	case name == "Read" && strings.HasSuffix(in.Get("file_path").String(), ".yml"):
		path, offset := in.Get("file_path").String(), int(in.Get("offset").Int())
		r.check(path, result)
		if sm := tl.target.FindStringSubmatch(result); sm != nil {
			r.fromYML = sm[1]
			return load(tl.snapshot)
		}
		if offset > 20*chunkLines || !readLine.MatchString(result) {
			return "", "The page I was shown has no such button."
		}
		return read(path, offset+chunkLines)
	case name == "ToolSearch" && strings.HasSuffix(in.Get("query").String(), tl.snapshot):
		return tl.snapshot, tl.snapshotInput
	case name == tl.snapshot:
		saved := savedOutput.FindStringSubmatch(result)
		if saved == nil {
			return "", "The snapshot was shown inline, not saved."
		}
		in, _ := json.Marshal(map[string]string{"file_path": saved[1]})
		return "Read", string(in)
	case name == "Read":
		// The saved tool output is JSON: the page is an escaped string on
		// one numbered line.
		r.jsonRefs = strings.Count(result, "[ref=")
		if sm := tl.target.FindStringSubmatch(strings.ReplaceAll(result, `\"`, `"`)); sm != nil {
			r.fromJSON = sm[1]
			return load(tl.click)
		}
		return "", "The page I was shown has no such button."
	case name == "ToolSearch" && strings.HasSuffix(in.Get("query").String(), tl.click):
		return tl.click, fmt.Sprintf(tl.clickInput, r.fromJSON)
	case name == tl.click:
		if r.clicked = strings.Contains(result, "Place order") && !strings.Contains(result, "Error"); !r.clicked {
			return "", "The click failed."
		}
	}
	return "", "Done: the order is placed."
}

// check compares each numbered line of a chunk with the line of that number
// in the file on disk, and counts the chunk's lines.
func (r *bigReader) check(path, chunk string) {
	f, err := os.Open(path)
	if err != nil {
		r.bad = append(r.bad, err.Error())
		return
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	got := readLine.FindAllStringSubmatch(chunk, -1)
	for _, l := range got {
		n, _ := strconv.Atoi(l[1])
		if n < 1 || n > len(lines) || lines[n-1] != l[2] {
			r.bad = append(r.bad, l[0])
		}
	}
	r.chunks = append(r.chunks, len(got))
}

// The real Claude Code CLI on a page too large to be shown inline: Playwright
// MCP's snapshot file is read back with Read in numbered chunks, each pruned
// with its line numbers kept as Claude Code wrote them; the snapshot it saves
// to a JSON file is read back and pruned inside its escaped line; the
// count_tokens calls that size those outputs go through unchanged; the click
// lands on the ref the model read. The fake upstream counts every body as
// 1,000 tokens, so Read returns the saved JSON file whole; against Anthropic,
// Read refuses a file over 25,000 tokens and the model must page through it.
func TestClaudeCodeReadsABigSnapshotBackThroughTheGateway(t *testing.T) {
	node, modules, chromium := e2eRequirements(t)
	claude := e2eBin(t, modules, "claude", "Claude Code")
	pages := httptest.NewServer(http.FileServer(http.Dir(bigPage(t))))
	t.Cleanup(pages.Close)
	home := t.TempDir()
	model := newScriptedClaude(t, pages.URL+"/catalogue.html", playwrightTools)
	reader := &bigReader{m: model, dir: home}
	model.script = reader.next
	gw := startGateway(t, map[string]string{"FOCUSGATE_ANTHROPIC_URL": model.URL})
	front := newClientRecorder(t, gw.URL)

	tl := playwrightTools
	mcpConfig := filepath.Join(home, "mcp.json")
	writeJSONFile(mcpConfig, map[string]any{"mcpServers": map[string]any{"playwright": tl.server(node, modules, chromium, home)}})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "Open "+pages.URL+"/catalogue.html in the browser and click Place order.",
		"--model", "claude-sonnet-4-5", "--output-format", "json", "--mcp-config", mcpConfig,
		"--allowedTools", strings.Join([]string{"ToolSearch", "Read", tl.navigate, tl.snapshot, tl.click}, ","))
	cmd.Dir = home
	cmd.Env = []string{
		"HOME=" + home, "PATH=" + filepath.Join(modules, ".bin") + ":" + os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL=" + front.URL, "ANTHROPIC_API_KEY=sk-ant-e2e-not-a-real-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, tail(string(out), 3000))
	}
	if r := gjson.GetBytes(out, "result").String(); r != "Done: the order is placed." {
		t.Fatalf("Claude Code ended with %q", tail(string(out), 1000))
	}

	reader.mu.Lock()
	defer reader.mu.Unlock()
	if reader.fromYML == "" || reader.fromJSON == "" || reader.fromYML != reader.fromJSON {
		t.Errorf("the target's ref read in the snapshot file %q, in the saved output %q: want the same, found in both", reader.fromYML, reader.fromJSON)
	}
	if !reader.clicked {
		t.Error("Playwright MCP did not report the click on Place order")
	}
	// The snapshot has 3,007 refs; pruned, the root's and the target's.
	if reader.jsonRefs == 0 || reader.jsonRefs > 10 {
		t.Errorf("the saved snapshot reached the model with %d element refs, want it pruned to a few", reader.jsonRefs)
	}
	if len(reader.bad) > 0 {
		t.Errorf("%d numbered lines the model was sent are not the file's lines of those numbers, e.g. %q", len(reader.bad), reader.bad[0])
	}
	// Every chunk but the last is a full one as Claude Code read it; pruned,
	// it keeps a few lines.
	for i, n := range reader.chunks {
		if n == 0 || n >= chunkLines {
			t.Errorf("chunk %d reached the model with %d numbered lines of %d: not pruned", i, n, chunkLines)
		}
	}
	if len(reader.chunks) < 2 {
		t.Errorf("the snapshot file was read in %d chunks, want several", len(reader.chunks))
	}

	bodies, answers := front.sent()
	sent := map[string]bool{}
	pruned := 0
	for i, b := range bodies {
		sent[string(b)] = true
		if strings.HasPrefix(answers[i].Get("X-Focusgate-Status"), "pruned") {
			pruned++
		}
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	if len(model.counted) == 0 {
		t.Error("Claude Code sized no output with count_tokens")
	}
	for i, b := range model.counted {
		if !sent[string(b)] {
			t.Errorf("count_tokens body %d (%d bytes) reached the upstream changed", i, len(b))
		}
	}
	t.Logf("%d requests, %d pruned, %d count_tokens passed through; chunks of the snapshot file as the model got them: %v lines of %d; click on %s",
		len(bodies), pruned, len(model.counted), reader.chunks, chunkLines, reader.fromJSON)
}
