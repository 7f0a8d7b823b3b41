package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/pipeline"
	"github.com/focusgate/focusgate/prune"
)

// adminPage is the real Playwright MCP snapshot of the captured Claude Code
// conversation, without its yaml fence.
func adminPage(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../testdata/agents/claude-code/playwright-mcp-admin/07-messages-stream.json")
	if err != nil {
		t.Fatal(err)
	}
	snapshot := gjson.GetBytes(raw, "messages.8.content.0.content.0.text").String()
	_, yaml, _ := strings.Cut(snapshot, "```yaml\n")
	page, _, _ := strings.Cut(yaml, "\n```")
	return page
}

// codexExec is a Codex conversation whose exec_command output is output.
func codexExec(t *testing.T, output string) []byte {
	t.Helper()
	js, _ := json.Marshal(output)
	return []byte(`{"model":"gpt-5","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Open the admin page and click Save employee."}]},` +
		`{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{\"cmd\":\"agent-browser snapshot\"}"},` +
		`{"type":"function_call_output","call_id":"c1","output":` + string(js) + `}]}`)
}

// Codex's shell output: its header and its truncation marker (the middle of
// a long output cut out, the two halves joined in one line) stay as they
// came; the tree on each side of the cut is pruned on its own.
func TestCodexOutputHeaderAndTruncation(t *testing.T) {
	lines := strings.Split(adminPage(t), "\n")
	n := len(lines)
	marker := lines[n/2][:10] + "…4210 tokens truncated…" + lines[n/2+20][8:]
	header := "Chunk ID: 3c1a9f\nWall time: 1.2040 seconds\nProcess exited with code 0\nOriginal token count: 9120\nOutput:\n"
	output := header + strings.Join(lines[:n/2], "\n") + "\n" + marker + "\n" + strings.Join(lines[n/2+21:], "\n")
	got, out := newGoldenPipeline().Rewrite(context.Background(), focusgate.Request{API: focusgate.APIResponses, Body: codexExec(t, output)})
	if out.Status != focusgate.StatusPruned || len(out.Pages) != 2 {
		t.Fatalf("%s %s, %d pages: want both halves found and pruned", out.Status, out.Reason, len(out.Pages))
	}
	sent := gjson.GetBytes(got, "input.2.output").String()
	if !strings.HasPrefix(sent, header) || !strings.Contains(sent, "\n"+marker+"\n") || len(sent) >= len(output) {
		t.Errorf("the header or the marker line changed, or nothing was pruned:\n%.400s", sent)
	}
}

// What holds nothing to prune is left alone: Claude Code's preview of an
// output it saved to a file, Playwright MCP's link to a snapshot file.
func TestPreviewsAndLinksAreLeftAlone(t *testing.T) {
	page := adminPage(t)
	preview := "<persisted-output>\nOutput too large (45.2KB). Full output saved to: /root/.claude/projects/-tmp/tool-results/toolu_01.txt\n\nPreview (first 2KB):\n" +
		page[:2048] + "\n...\n</persisted-output>"
	link := "### Ran Playwright code\n```js\nawait page.goto('http://127.0.0.1:19081/admin');\n```\n### Page\n- Page URL: http://127.0.0.1:19081/admin\n- Page Title: New employee\n### Snapshot\n- [Snapshot](page-2026-11-24T12-00-00-000Z.yml)"
	opts := goldenOptions()
	opts.Pruner = newZeroMinPruner() // even a small preview would be pruned were it searched
	p := pipeline.New(opts)
	for name, text := range map[string]string{"persisted-output preview": preview, "snapshot file link": link} {
		body := claudeRead(t, text)
		got, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIMessages, Body: body})
		if out.Status != focusgate.StatusSkipped || out.Reason != focusgate.ReasonNoObservation || !bytes.Equal(got, body) {
			t.Errorf("%s: %s %s, changed %v; want skipped no-observation, unchanged", name, out.Status, out.Reason, !bytes.Equal(got, body))
		}
	}
}

// agent-browser's content markers around its snapshot stay as they came;
// only the tree between them is pruned.
func TestAgentBrowserWrapperStaysIntact(t *testing.T) {
	open := "--- AGENT_BROWSER_PAGE_CONTENT nonce=9f2c41d0 origin=http://127.0.0.1:19081 ---"
	end := "--- END_AGENT_BROWSER_PAGE_CONTENT nonce=9f2c41d0 ---"
	output := open + "\n" + adminPage(t) + "\n" + end
	got, out := newGoldenPipeline().Rewrite(context.Background(), focusgate.Request{API: focusgate.APIResponses, Body: codexExec(t, output)})
	if out.Status != focusgate.StatusPruned {
		t.Fatalf("%s %s: want pruned", out.Status, out.Reason)
	}
	sent := gjson.GetBytes(got, "input.2.output").String()
	if !strings.HasPrefix(sent, open+"\n") || !strings.HasSuffix(sent, "\n"+end) {
		t.Errorf("the markers changed:\n%.200s\n...\n%s", sent, sent[max(0, len(sent)-200):])
	}
}

// newZeroMinPruner is the golden pipeline's pruner without a minimum size.
func newZeroMinPruner() *prune.Pruner {
	return prune.New(prune.Config{RetrieverModel: "gpt-4.1-mini", MinTokens: 0, UseHistory: true}, wordRetriever{}, nil)
}
