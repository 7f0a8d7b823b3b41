package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/focusgate/focusgate"
)

// readChunk numbers lines first to last (1-based, inclusive) of text the
// way Claude Code's Read tool returns a file: the number, a tab, the line.
func readChunk(text string, first, last int, format string) string {
	lines := strings.Split(text, "\n")
	var b strings.Builder
	for n := first; n <= last && n <= len(lines); n++ {
		if n > first {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, format, n, lines[n-1])
	}
	return b.String()
}

// claudeRead is a Claude Code conversation in which the model read a saved
// page back with Read, chunk being the tool result.
func claudeRead(t *testing.T, chunk string) []byte {
	t.Helper()
	js, _ := json.Marshal(chunk)
	return []byte(`{"model":"claude-sonnet-4-5","max_tokens":32000,"messages":[` +
		`{"role":"user","content":[{"type":"text","text":"Open the admin page and click Save employee."}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/tmp/page.yml","offset":1,"limit":2000}}]},` +
		`{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":` + string(js) + `,"cache_control":{"type":"ephemeral"}}]}]}`)
}

var gutter = regexp.MustCompile(`^ *(\d+)(\t|→)`)

// A page read back from a file, its lines numbered, is pruned with the
// numbers set aside and written back with each kept line's own number; a
// chunk that starts and ends inside the tree is a tree too. Nothing outside
// the chunk changes, and the body stays valid JSON.
func TestNumberedFileReadsArePrunedWithTheirNumbers(t *testing.T) {
	raw, err := os.ReadFile("../testdata/agents/claude-code/playwright-mcp-admin/07-messages-stream.json")
	if err != nil {
		t.Fatal(err)
	}
	snapshot := gjson.GetBytes(raw, "messages.8.content.0.content.0.text").String()
	_, yaml, _ := strings.Cut(snapshot, "```yaml\n")
	page, _, _ := strings.Cut(yaml, "\n```")
	total := strings.Count(page, "\n") + 1
	for _, tt := range []struct {
		name          string
		first, last   int
		format        string
		wantFirstLine int
	}{
		{"Claude Code's Read, the whole page", 1, total, "%d\t%s", 1},
		{"a chunk from inside the tree", 40, total - 10, "%d\t%s", 40},
		{"cat -n", 1, total, "%6d\t%s", 1},
		{"an arrow", 1, total, "%6d→%s", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			chunk := readChunk(page, tt.first, tt.last, tt.format)
			body := claudeRead(t, chunk)
			got, out := newGoldenPipeline().Rewrite(context.Background(), focusgate.Request{API: focusgate.APIMessages, Body: body})
			if out.Status != focusgate.StatusPruned || len(out.Pages) != 1 || out.Pages[0].Format != "playwright" {
				t.Fatalf("%s %s, %d pages: want the read pruned as a playwright tree", out.Status, out.Reason, len(out.Pages))
			}
			if !json.Valid(got) {
				t.Fatal("the rewritten body is not JSON")
			}
			sent := gjson.GetBytes(got, "messages.2.content.0.content").String()
			if len(sent) >= len(chunk) {
				t.Errorf("the read was not made smaller (%d of %d bytes)", len(sent), len(chunk))
			}
			orig := map[string]string{}
			for _, line := range strings.Split(chunk, "\n") {
				if m := gutter.FindStringSubmatch(line); m != nil {
					orig[m[1]] = line
				}
			}
			numbered := 0
			for _, line := range strings.Split(sent, "\n") {
				m := gutter.FindStringSubmatch(line)
				if m == nil {
					if !strings.Contains(line, "pruned") {
						t.Errorf("line %q has no number and is not a marker", line)
					}
					continue
				}
				numbered++
				if orig[m[1]] != line {
					t.Errorf("line %s came out as %q; the read had %q", m[1], line, orig[m[1]])
				}
			}
			if numbered < 2 || !strings.HasPrefix(sent, strings.SplitN(chunk, "\n", 2)[0]) {
				t.Errorf("%d numbered lines kept; the first line of the read must stay first:\n%.300s", numbered, sent)
			}
			// Everything outside the read is as the client sent it.
			firstGutter := gutter.FindString(chunk)
			start := strings.Index(string(body), `"content":"`+strings.TrimRight(firstGutter, "\t"))
			if start < 0 || string(got[:start]) != string(body[:start]) || !strings.HasSuffix(string(got), `,"cache_control":{"type":"ephemeral"}}]}]}`) {
				t.Error("bytes outside the read changed")
			}
		})
	}
}

// Claude Code saves a large MCP result of several parts as a JSON file, so
// the model reads the page back as one escaped line of a numbered read. The
// tree inside is pruned and written back escaped as it came: the read, its
// numbers set aside, is still the JSON file, whose text is the pruned page.
func TestPageInAJSONFileRead(t *testing.T) {
	raw, err := os.ReadFile("../testdata/agents/claude-code/playwright-mcp-admin/07-messages-stream.json")
	if err != nil {
		t.Fatal(err)
	}
	result := gjson.GetBytes(raw, "messages.8.content.0.content").Raw // the MCP result's parts
	var parts any
	if err := json.Unmarshal([]byte(result), &parts); err != nil {
		t.Fatal(err)
	}
	file, _ := json.MarshalIndent(parts, "", "  ")
	chunk := readChunk(string(file), 1, strings.Count(string(file), "\n")+1, "%d\t%s")
	body := claudeRead(t, chunk)
	got, out := newGoldenPipeline().Rewrite(context.Background(), focusgate.Request{API: focusgate.APIMessages, Body: body})
	if out.Status != focusgate.StatusPruned || len(out.Pages) != 1 || observations(t, body, focusgate.APIMessages)[0].Nested != 1 {
		t.Fatalf("%s %s, %d pages: want the page in the JSON line found and pruned", out.Status, out.Reason, len(out.Pages))
	}
	sent := gjson.GetBytes(got, "messages.2.content.0.content").String()
	var plain strings.Builder
	for _, line := range strings.Split(sent, "\n") {
		m := gutter.FindStringSubmatchIndex(line)
		if m == nil {
			t.Fatalf("line %q lost its number", line)
		}
		plain.WriteString(line[m[1]:] + "\n")
	}
	var back []struct{ Type, Text string }
	if err := json.Unmarshal([]byte(plain.String()), &back); err != nil {
		t.Fatalf("the read, numbers set aside, is no longer JSON: %v", err)
	}
	before, after := 0, 0
	for _, p := range gjson.Get(result, "#.text").Array() {
		before += len(p.String())
	}
	for _, p := range back {
		after += len(p.Text)
	}
	if after >= before || !strings.Contains(sent, `button \"Save employee\"`) {
		t.Errorf("the page in the file was not pruned (%d of %d bytes of text), or lost its target", after, before)
	}
}
