//go:build e2e

package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// An application built on the Claude Agent SDK (the pinned
// @anthropic-ai/claude-agent-sdk, e2e/claude-agent-sdk.mjs: query() with
// Playwright MCP as a stdio server), pointed at the gateway with
// ANTHROPIC_BASE_URL and nothing else. On the form, the snapshot reaches the
// model pruned with the target kept and the click lands on the ref it read.
// On the catalogue, too big to be shown inline, Playwright MCP's snapshot
// file is read back in numbered chunks and the saved JSON output of the
// snapshot is read back: each reaches the model pruned, the line numbers as
// the SDK wrote them, and the click lands.
//
// FOCUSGATE_E2E_CAPTURE=DIR writes each body the SDK sent into
// DIR/<case>/NN-<endpoint>.json (see testdata/agents/README.md).
func TestClaudeAgentSDKRunsThroughTheGateway(t *testing.T) {
	node, modules, chromium := e2eRequirements(t)
	if _, err := os.Stat(filepath.Join(modules, "@anthropic-ai/claude-agent-sdk/sdk.mjs")); err != nil {
		t.Fatalf("the Claude Agent SDK is not installed (%v): run scripts/install-e2e.sh", err)
	}
	script, _ := filepath.Abs("../../e2e/claude-agent-sdk.mjs")
	small := httptest.NewServer(http.FileServer(http.Dir("../../e2e/pages")))
	t.Cleanup(small.Close)
	big := httptest.NewServer(http.FileServer(http.Dir(bigPage(t))))
	t.Cleanup(big.Close)
	tl := playwrightTools
	for _, tc := range []struct {
		name, page string
		big        bool // read back from files, not shown inline
	}{
		{"playwright-mcp-form", small.URL + "/form.html", false},
		{"playwright-mcp-catalogue", big.URL + "/catalogue.html", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := agentHome(t)
			model := newScriptedClaude(t, tc.page, tl)
			var reader *bigReader
			allowed := []string{"ToolSearch", tl.navigate, tl.snapshot, tl.click}
			if tc.big {
				reader = &bigReader{m: model, dir: home}
				model.script = reader.next
				allowed = append(allowed, "Read")
			}
			gw := startGateway(t, map[string]string{"FOCUSGATE_ANTHROPIC_URL": model.URL})
			front := newClientRecorder(t, gw.URL)
			servers := filepath.Join(home, "mcp.json")
			writeJSONFile(servers, map[string]any{"playwright": tl.server(node, modules, chromium, home)})

			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, script, "Open "+tc.page+" in the browser and click Place order.", servers, strings.Join(allowed, ","))
			cmd.Dir = home
			cmd.Env = []string{
				"HOME=" + home, "PATH=" + filepath.Dir(node) + ":" + os.Getenv("PATH"),
				"ANTHROPIC_BASE_URL=" + front.URL, "ANTHROPIC_API_KEY=sk-ant-e2e-not-a-real-key",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
			}
			out, err := cmd.Output()
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			bodies, answers := front.sent()
			if dir := os.Getenv("FOCUSGATE_E2E_CAPTURE"); dir != "" {
				for k, b := range bodies {
					endpoint := "messages-stream"
					if !gjson.GetBytes(b, "max_tokens").Exists() {
						endpoint = "count_tokens"
					}
					captureBody(t, filepath.Join(dir, tc.name, fmt.Sprintf("%02d-%s.json", k+1, endpoint)), b, anthropicVendorText)
				}
			}
			if err != nil {
				t.Fatalf("the SDK run failed: %v\n%s\n%s", err, tail(string(out), 2000), tail(stderr, 3000))
			}
			if r := gjson.GetBytes(out, "result").String(); r != "Done: the order is placed." {
				t.Errorf("the SDK ended with %q", tail(string(out), 1000))
			}
			pruned := 0
			for i, h := range answers {
				if !strings.HasPrefix(h.Get("X-Focusgate-Status"), "pruned") {
					continue
				}
				pruned++
				// A chunk of the big snapshot file may hold no target at all.
				if !tc.big && tl.target.FindStringSubmatch(strings.ReplaceAll(string(bodies[i]), `\"`, `"`)) == nil {
					t.Errorf("request %d was pruned, and the target is not in what the client sent", i)
				}
			}
			if pruned == 0 {
				t.Errorf("no request of %d was pruned: the snapshot reached the model whole", len(answers))
			}
			if !tc.big {
				model.mu.Lock()
				clicked, lost := model.clicked, model.lost
				model.mu.Unlock()
				if lost || clicked == "" {
					t.Fatalf("the model never saw the target in its snapshot (lost %v): pruning hid it", lost)
				}
				t.Logf("%d requests, %d pruned, click on %s", len(answers), pruned, clicked)
				return
			}
			reader.mu.Lock()
			defer reader.mu.Unlock()
			if reader.fromYML == "" || reader.fromJSON == "" || reader.fromYML != reader.fromJSON {
				t.Errorf("the target's ref read in the snapshot file %q, in the saved output %q: want the same, found in both", reader.fromYML, reader.fromJSON)
			}
			if !reader.clicked {
				t.Error("Playwright MCP did not report the click on Place order")
			}
			if reader.jsonRefs == 0 || reader.jsonRefs > 10 {
				t.Errorf("the saved snapshot reached the model with %d element refs, want it pruned to a few", reader.jsonRefs)
			}
			if len(reader.bad) > 0 {
				t.Errorf("%d numbered lines the model was sent are not the file's lines of those numbers, e.g. %q", len(reader.bad), reader.bad[0])
			}
			for i, n := range reader.chunks {
				if n == 0 || n >= chunkLines {
					t.Errorf("chunk %d reached the model with %d numbered lines of %d: not pruned", i, n, chunkLines)
				}
			}
			// The count_tokens calls that size each output alone go through
			// as the SDK sent them.
			sent := map[string]bool{}
			for _, b := range bodies {
				sent[string(b)] = true
			}
			model.mu.Lock()
			counted := model.counted
			model.mu.Unlock()
			if len(counted) == 0 {
				t.Error("the SDK sized no output with count_tokens")
			}
			for i, b := range counted {
				if !sent[string(b)] {
					t.Errorf("count_tokens body %d (%d bytes) reached the upstream changed", i, len(b))
				}
			}
			t.Logf("%d requests, %d pruned, %d count_tokens passed through; chunks of the snapshot file as the model got them: %v lines of %d; click on %s",
				len(bodies), pruned, len(counted), reader.chunks, chunkLines, reader.fromJSON)
		})
	}
}

// anthropicVendorText says which strings of a Claude Code or Agent SDK body
// are Anthropic's own prose: the system blocks' text, every description of a
// tool or of its input schema, and the inside of long <system-reminder>
// blocks (short ones, such as the tokens left, stay: pages are found around
// them).
func anthropicVendorText(path []string, s string) (string, bool) {
	if path[0] == "system" && path[len(path)-1] == "text" || path[0] == "tools" && path[len(path)-1] == "description" {
		return "", true
	}
	const open, end = "<system-reminder>\n", "\n</system-reminder>"
	if path[0] == "messages" && len(s) > 300 && strings.HasPrefix(s, open) && strings.HasSuffix(s, end) {
		return open + removed(s[len(open):len(s)-len(end)]) + end, true
	}
	return "", false
}
