package pipeline_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
)

// playwrightPage is a Playwright MCP snapshot of a product list large enough
// to be pruned, as @playwright/mcp prints it.
func playwrightPage(items int) string {
	var sb strings.Builder
	sb.WriteString("- generic [ref=e1]:\n  - banner [ref=e2]:\n    - link \"Example Shop <home>\" [ref=e3] [cursor=pointer]:\n      - /url: /\n  - main [ref=e4]:\n    - list [ref=e5]:\n")
	for i := range items {
		fmt.Fprintf(&sb, "      - listitem [ref=e%d]:\n        - link \"Laptop model %d – 14\\\" screen, 16 GB\" [ref=e%d] [cursor=pointer]:\n          - /url: /p/%d\n        - button \"Add to cart\" [ref=e%d]\n",
			10+4*i, i, 11+4*i, i, 12+4*i)
	}
	sb.WriteString("  - contentinfo [ref=e900]: © Example Shop")
	return sb.String()
}

// TestStringifiedToolResultIsPruned sends a tool message whose content is
// JSON.stringify of MCP content parts, as hand-written tool loops do: the tree
// is a string inside a JSON text inside the message's string. The pruned tree
// goes back escaped twice, so the content still decodes to the same JSON with
// only the tree's text changed, and nothing else in the body moves.
func TestStringifiedToolResultIsPruned(t *testing.T) {
	rt := newRetriever(t, keep("Laptop model 7 ", "[ref=e42]"))
	page := playwrightPage(60)
	head := "### Ran Playwright code\n```js\nawait page.goto('https://shop.example/');\n```\n\n### Page\n- Page URL: https://shop.example/\n- Page Title: Laptops <sale> \"today\"\n### Snapshot\n```yaml\n"
	tail := "\n```\n"
	parts, _ := json.Marshal([]map[string]string{{"type": "text", "text": head + page + tail}})
	body, _ := json.Marshal(map[string]any{
		"model": "gpt-4.1",
		"messages": []map[string]any{
			{"role": "user", "content": "Add laptop model 7 to the cart."},
			{"role": "assistant", "tool_calls": []map[string]any{{"id": "c1", "type": "function", "function": map[string]string{"name": "browser_navigate", "arguments": `{"url":"https://shop.example/"}`}}}},
			{"role": "tool", "tool_call_id": "c1", "content": string(parts)},
		},
	})
	obs := onlyObservation(t, body)
	if obs.Nested != 1 || obs.Text != page {
		t.Fatalf("observation Nested=%d, %d bytes; want the page one JSON text deep", obs.Nested, len(obs.Text))
	}

	sent, out := rewrite(pruningPipeline(rt), chat(body))
	if out.Status != focusgate.StatusPruned {
		t.Fatalf("%s %s, want pruned", out.Status, out.Reason)
	}
	if !json.Valid(sent) {
		t.Fatal("the pipeline returned invalid JSON")
	}
	suffix := len(body) - obs.RawEnd
	if !bytes.Equal(sent[:obs.RawStart], body[:obs.RawStart]) || !bytes.Equal(sent[len(sent)-suffix:], body[obs.RawEnd:]) {
		t.Error("bytes outside the tree span changed")
	}
	content := gjson.GetBytes(sent, "messages.2.content").String()
	var got []map[string]string
	if err := json.Unmarshal([]byte(content), &got); err != nil {
		t.Fatalf("the tool message no longer holds JSON: %v", err)
	}
	text := got[0]["text"]
	if len(got) != 1 || got[0]["type"] != "text" || !strings.HasPrefix(text, head) || !strings.HasSuffix(text, tail) {
		t.Fatalf("the content parts changed around the tree: %.200q", content)
	}
	tree := strings.TrimSuffix(strings.TrimPrefix(text, head), tail)
	for _, want := range []string{"- generic [ref=e1]:", "Laptop model 7 ", "[ref=e42]", "lines pruned"} {
		if !strings.Contains(tree, want) {
			t.Errorf("pruned tree lacks %q", want)
		}
	}
	if strings.Contains(tree, "Laptop model 30 ") || len(tree) > len(page)/4 {
		t.Errorf("the tree was not pruned to the selection (%d of %d bytes)", len(tree), len(page))
	}
}

// TestRealToolRequestsArePruned replays requests captured from the real tools
// (Stagehand 3.7.3, chrome-devtools-mcp 1.11.0, @playwright/mcp 0.0.83 in a
// loop that stringifies tool results), with a retriever that keeps the "Add
// to cart" button: each is pruned, the button survives, and nothing outside
// the newest tree changes.
func TestRealToolRequestsArePruned(t *testing.T) {
	tests := []struct {
		file string
		api  focusgate.API
		keep string // the line the retriever keeps
	}{
		{"chat_stagehand_observe.json", focusgate.APIChat, "button: Add to cart"},
		{"responses_stagehand_extract.json", focusgate.APIResponses, "button: Add to cart"},
		{"chat_chrome_devtools_mcp.json", focusgate.APIChat, `button "Add to cart"`},
		{"chat_playwright_mcp_json_content.json", focusgate.APIChat, `button "Add to cart"`},
		{"responses_playwright_mcp_json_content.json", focusgate.APIResponses, `button "Add to cart"`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			rt := newRetriever(t, keep(tt.keep))
			body := readFile(t, "../detect/testdata/requests/"+tt.file)
			obs, err := detect.Find(body, tt.api, detect.Options{})
			if err != nil || len(obs) != 1 {
				t.Fatalf("want one observation, got %d (%v)", len(obs), err)
			}
			o := obs[0]
			sent, out := rewrite(pruningPipeline(rt), focusgate.Request{API: tt.api, Body: body})
			if out.Status != focusgate.StatusPruned {
				t.Fatalf("%s %s, want pruned", out.Status, out.Reason)
			}
			suffix := len(body) - o.RawEnd
			if !json.Valid(sent) || !bytes.Equal(sent[:o.RawStart], body[:o.RawStart]) || !bytes.Equal(sent[len(sent)-suffix:], body[o.RawEnd:]) {
				t.Fatal("the body is not valid JSON, or bytes outside the tree changed")
			}
			// Decode the tree's string as often as it is nested.
			holder := gjson.GetBytes(sent, o.Path).String()
			if o.Nested > 0 {
				if !json.Valid([]byte(holder)) {
					t.Fatalf("%s no longer holds JSON", o.Path)
				}
				holder = gjson.Get(holder, "0.text").String()
			}
			if !strings.Contains(holder, tt.keep) || !strings.Contains(holder, "lines pruned") {
				t.Errorf("the pruned page lacks %q or a marker", tt.keep)
			}
			t.Logf("%s: %d lines, observation tokens %d -> %d, body %d -> %d bytes", o.Format, len(o.Lines), out.TokensBefore, out.TokensAfter, len(body), len(sent))
		})
	}
}
