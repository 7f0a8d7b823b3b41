package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/focusgate/focusgate"
)

// geminiCall is a Gemini CLI conversation whose one function response holds
// output, followed by extra contents.
func geminiCall(t *testing.T, output string, extra ...string) []byte {
	t.Helper()
	js, _ := json.Marshal(output)
	contents := []string{
		`{"parts":[{"text":"<session_context>\nThis is the Gemini CLI.\n</session_context>"},{"text":"Open the admin page and click Save employee."}],"role":"user"}`,
		`{"parts":[{"functionCall":{"id":"s1","args":{},"name":"mcp_playwright_browser_snapshot"},"thoughtSignature":"skip_thought_signature_validator"}],"role":"model"}`,
		`{"parts":[{"functionResponse":{"name":"mcp_playwright_browser_snapshot","response":{"output":` + string(js) + `},"id":"s1"}}],"role":"user"}`,
	}
	return []byte(`{"contents":[` + strings.Join(append(contents, extra...), ",") + `],"generationConfig":{"temperature":1}}`)
}

// A long output that Gemini CLI cut in the middle is one output with a tree
// on each side of the omission line: both are the newest page and are pruned,
// each with a selection of its own, not only the one nearest the end; the
// next request re-applies both, so the conversation reaches the provider with
// the same bytes.
func TestEveryTreeOfACutOutputIsPruned(t *testing.T) {
	lines := strings.Split(adminPage(t), "\n")
	n := len(lines)
	output := "Output too large. Showing first 8,000 and last 32,000 characters. For full output see: /tmp/out.txt\n<untrusted_context>\n" +
		strings.Join(lines[:n/2], "\n") + "\n\n... [18,230 characters omitted] ...\n\n" + strings.Join(lines[n/2+20:], "\n") + "\n</untrusted_context>"
	p := newGoldenPipeline()
	first := geminiCall(t, output)
	got, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIGemini, Body: first})
	if out.Status != focusgate.StatusPruned || len(out.Pages) != 2 {
		t.Fatalf("%s %s, %d pages: want both sides of the cut found and pruned", out.Status, out.Reason, len(out.Pages))
	}
	for i, pg := range out.Pages {
		if pg.Status != focusgate.StatusPruned {
			t.Errorf("page %d of the cut output: %s %s, want pruned", i, pg.Status, pg.Reason)
		}
	}
	if out.Older != (focusgate.Older{}) {
		t.Errorf("older pages %+v: both sides are the newest output", out.Older)
	}
	const sent = "contents.2.parts.0.functionResponse.response.output"
	if s := gjson.GetBytes(got, sent).String(); !strings.Contains(s, "\n\n... [18,230 characters omitted] ...\n\n") || len(s) >= len(output) {
		t.Errorf("the omission line changed, or nothing was pruned:\n%.400s", s)
	}

	next := geminiCall(t, output, `{"parts":[{"functionCall":{"id":"c1","args":{"ref":"e90"},"name":"mcp_playwright_browser_click"}}],"role":"model"}`,
		`{"parts":[{"functionResponse":{"name":"mcp_playwright_browser_click","response":{"output":"Clicked."},"id":"c1"}}],"role":"user"}`)
	again, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIGemini, Body: next})
	if a, b := gjson.GetBytes(got, "contents.2").Raw, gjson.GetBytes(again, "contents.2").Raw; a != b {
		t.Errorf("the cut output went out differently in the next request (%s): the prompt cache misses from there on", out.Status)
	}
	if bytes.Equal(again, next) {
		t.Error("the next request went out whole")
	}
}
