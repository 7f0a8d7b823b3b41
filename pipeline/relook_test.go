package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/bench/workload"
	"github.com/focusgate/focusgate/pipeline"
)

func readPage(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("../testdata/axtrees/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A second look at the same page right after a pruned one goes out whole;
// the first stays as it was forwarded; a new page after an action is pruned
// again; and every later request forwards the earlier turns byte for byte.
func TestRelookGoesOutWhole(t *testing.T) {
	laptop := readPage(t, "bgym-pr301_workarena_standard_laptop_form.txt")
	ipad := readPage(t, "bgym-pr301_workarena_ipad_pro_form.txt")
	p := newGoldenPipeline()
	send := func(body []byte) ([]byte, focusgate.Outcome) {
		return p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: body})
	}

	first, out := send(workload.ToolLoop("gpt-4.1", [2]string{"snapshot", laptop}))
	if out.Status != focusgate.StatusPruned {
		t.Fatalf("first look: %s %s, want pruned", out.Status, out.Reason)
	}

	again := workload.ToolLoop("gpt-4.1", [2]string{"snapshot", laptop}, [2]string{"snapshot", laptop})
	second, out := send(again)
	if out.Status != focusgate.StatusSkipped || out.Reason != focusgate.ReasonRelook || !out.Relook {
		t.Fatalf("second look: %s %s relook=%v, want skipped re-look", out.Status, out.Reason, out.Relook)
	}
	if got := toolResults(t, second); got[1] != laptop || got[0] == laptop {
		t.Errorf("tool results forwarded with %d and %d bytes: want the first pruned, the re-look whole (%d)", len(got[0]), len(got[1]), len(laptop))
	}
	if out.Older.Reapplied != 1 {
		t.Errorf("older pages re-applied: %d, want the first look, pruned as before", out.Older.Reapplied)
	}
	if out.TokensBefore != out.Pages[0].TokensBefore*2 || out.Pages[1].TokensAfter != out.Pages[1].TokensBefore {
		t.Errorf("tokens %d -> %d: the re-look must count whole", out.TokensBefore, out.TokensAfter)
	}
	assertSamePrefix(t, first, second)

	moved := workload.ToolLoop("gpt-4.1", [2]string{"snapshot", laptop}, [2]string{"snapshot", laptop}, [2]string{"click", ipad})
	third, out := send(moved)
	if out.Status != focusgate.StatusPruned || out.Relook {
		t.Fatalf("new page after an action: %s %s, want pruned", out.Status, out.Reason)
	}
	if got := toolResults(t, third); got[1] != laptop || out.Pages[1].Reason != focusgate.ReasonRelook {
		t.Errorf("the earlier re-look is now %s %s (%d bytes): it must stay whole, as it was forwarded", out.Pages[1].Status, out.Pages[1].Reason, len(got[1]))
	}
	assertSamePrefix(t, second, third)

	// A third look after the whole one is pruned again: the agent saw the
	// page whole the step before.
	thrice := workload.ToolLoop("gpt-4.1", [2]string{"snapshot", laptop}, [2]string{"snapshot", laptop}, [2]string{"snapshot", laptop})
	if _, out := send(thrice); out.Pages[2].Status != focusgate.StatusPruned {
		t.Errorf("a look after a whole one: %s %s, want pruned", out.Pages[2].Status, out.Pages[2].Reason)
	}
}

// toolResults decodes the tool messages of a forwarded chat body.
func toolResults(t *testing.T, body []byte) []string {
	t.Helper()
	var req struct {
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range req.Messages {
		if m.Role == "tool" {
			out = append(out, m.Content)
		}
	}
	return out
}

// assertSamePrefix checks that later forwards every message earlier
// forwarded byte for byte: the provider's prefix cache keeps hitting.
func assertSamePrefix(t *testing.T, earlier, later []byte) {
	t.Helper()
	end := bytes.LastIndex(earlier, []byte("]}")) // the end of the messages array
	if end < 0 || !bytes.HasPrefix(later, earlier[:end]) {
		t.Errorf("the earlier turns were not forwarded byte for byte")
	}
}

// Models matching FOCUSGATE_BYPASS_MODELS are never pruned, older pages
// included.
func TestBypassModels(t *testing.T) {
	laptop := readPage(t, "bgym-pr301_workarena_standard_laptop_form.txt")
	ipad := readPage(t, "bgym-pr301_workarena_ipad_pro_form.txt")
	opts := goldenOptions()
	opts.BypassModels = []string{"o3*", "openai/GPT-5-*"}
	p := pipeline.New(opts)
	ctx := context.Background()

	// A pruned page, stored, then the same conversation with a bypassed
	// model: nothing is re-applied.
	if _, out := p.Rewrite(ctx, focusgate.Request{API: focusgate.APIChat, Body: workload.ToolLoop("gpt-4.1", [2]string{"snapshot", laptop})}); out.Status != focusgate.StatusPruned {
		t.Fatalf("gpt-4.1: %s %s, want pruned", out.Status, out.Reason)
	}
	for _, model := range []string{"o3", "o3-mini-2025-01-31", "azure/O3-pro", "gpt-5-mini"} {
		body := workload.ToolLoop(model, [2]string{"snapshot", laptop}, [2]string{"click", ipad})
		got, out := p.Rewrite(ctx, focusgate.Request{API: focusgate.APIChat, Body: body})
		if out.Status != focusgate.StatusSkipped || out.Reason != focusgate.ReasonBypassModel || !bytes.Equal(got, body) {
			t.Errorf("%s: %s %s, body changed: %v; want skipped bypass-model and the body as it came", model, out.Status, out.Reason, !bytes.Equal(got, body))
		}
	}
	if _, out := p.Rewrite(ctx, focusgate.Request{API: focusgate.APIChat, Body: workload.ToolLoop("gpt-4.1-mini", [2]string{"click", ipad})}); out.Reason == focusgate.ReasonBypassModel {
		t.Errorf("gpt-4.1-mini bypassed by patterns that do not match it")
	}
}

// Claude Code sizes one tool output alone with count_tokens before deciding
// to save it to a file: with no goal there, the body goes as it came. A
// count_tokens body that carries the conversation is rewritten as the
// request it sizes would be.
func TestCountTokensWithoutAGoalPassesThrough(t *testing.T) {
	laptop := readPage(t, "bgym-pr301_workarena_standard_laptop_form.txt")
	js, _ := json.Marshal(laptop)
	lone := []byte(`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":` + string(js) + `}]}]}]}`)
	p := newGoldenPipeline()
	got, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIMessages, Body: lone})
	if out.Status != focusgate.StatusSkipped || out.Reason != focusgate.ReasonNoGoal || !bytes.Equal(got, lone) {
		t.Errorf("a lone tool output: %s %s, changed %v; want skipped no-goal, unchanged", out.Status, out.Reason, !bytes.Equal(got, lone))
	}
	// What Claude Code 2.1.328 sends to count_tokens for a Playwright MCP
	// snapshot: the tool's text, headings and all, as a user text block.
	js, _ = json.Marshal("### Page\n- Page URL: http://localhost/laptop\n- Page Title: Standard Laptop\n### Snapshot\n```yaml\n" + laptop + "\n```")
	output := []byte(`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":[{"type":"text","text":` + string(js) + `}]}]}`)
	got, out = p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIMessages, Body: output, Sizing: true})
	if out.Status != focusgate.StatusSkipped || out.Reason != focusgate.ReasonNoGoal || !bytes.Equal(got, output) {
		t.Errorf("a tool output sized alone: %s %s, changed %v; want skipped no-goal, unchanged", out.Status, out.Reason, !bytes.Equal(got, output))
	}
	if _, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIMessages, Body: output}); out.Status != focusgate.StatusPruned {
		t.Errorf("the same message sent to be answered: %s %s, want pruned (its words are the only goal there is)", out.Status, out.Reason)
	}
	js, _ = json.Marshal(laptop)
	withTask := []byte(`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"Order a standard laptop"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"snapshot","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":` + string(js) + `}]}]}`)
	for _, sizing := range []bool{false, true} {
		if _, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIMessages, Body: withTask, Sizing: sizing}); out.Status != focusgate.StatusPruned {
			t.Errorf("a conversation with its task (sizing %v): %s %s, want pruned", sizing, out.Status, out.Reason)
		}
	}
}

// A count_tokens body of one message goes as it came whatever the system
// prompt holds: a task stated there, or the page itself. Sent to be
// answered, the same body is pruned, the system prompt stating the goal.
func TestCountTokensOfOneMessagePassesThroughWhateverTheSystemHolds(t *testing.T) {
	laptop := readPage(t, "bgym-pr301_workarena_standard_laptop_form.txt")
	page, _ := json.Marshal(laptop)
	result := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":` + string(page) + `}]}]}`
	text := `{"role":"user","content":[{"type":"text","text":"Order a standard laptop."},{"type":"tool_result","tool_use_id":"toolu_1","content":` + string(page) + `}]}`
	p := newGoldenPipeline()
	for _, tt := range []struct {
		name, body string
		answered   bool // sent to /v1/messages, the body is pruned
	}{
		{"a task as a string", `{"model":"claude-sonnet-4-5","system":"Order a standard laptop.","messages":[` + result + `]}`, true},
		{"a task in text blocks", `{"model":"claude-sonnet-4-5","system":[{"type":"text","text":"You are a web agent."},{"type":"text","text":"Order a standard laptop.","cache_control":{"type":"ephemeral"}}],"messages":[` + result + `]}`, true},
		{"after the message", `{"model":"claude-sonnet-4-5","messages":[` + result + `],"system":"Order a standard laptop."}`, true},
		{"a message of text and a tool result", `{"model":"claude-sonnet-4-5","system":"You are a web agent.","messages":[` + text + `]}`, true},
		{"the page itself", `{"model":"claude-sonnet-4-5","system":` + string(page) + `,"messages":[{"role":"user","content":"Order a standard laptop."}]}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.body)
			got, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIMessages, Body: body, Sizing: true})
			if out.Status != focusgate.StatusSkipped || out.Reason != focusgate.ReasonNoGoal || !bytes.Equal(got, body) {
				t.Errorf("count_tokens: %s %s, changed %v; want skipped no-goal, unchanged", out.Status, out.Reason, !bytes.Equal(got, body))
			}
			if !tt.answered {
				return
			}
			if _, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIMessages, Body: body}); out.Status != focusgate.StatusPruned {
				t.Errorf("sent to be answered: %s %s, want pruned", out.Status, out.Reason)
			}
		})
	}
}

// A bypassed model at the head of a body, where Claude Code and Codex name
// it, is read before the body is searched, and the request is skipped
// without reading the rest. One named after the conversation, as the Python
// SDKs of OpenAI and Anthropic name it, is read by detection's own walk, and
// the request is skipped all the same.
func TestBypassedModelIsReadWhereverTheAgentNamesIt(t *testing.T) {
	laptop := readPage(t, "bgym-pr301_workarena_standard_laptop_form.txt")
	opts := goldenOptions()
	opts.BypassModels = []string{"o3*"}
	p := pipeline.New(opts)
	const named = `,"model":"o3"}`
	trailing := workload.ToolLoop("o3", [2]string{"snapshot", laptop})
	if !bytes.HasSuffix(trailing, []byte(named)) {
		t.Fatalf("the tool loop does not end with %s", named)
	}
	leading := append([]byte(`{"model":"o3",`), trailing[1:len(trailing)-len(named)]...)
	leading = append(leading, '}')
	tests := []struct {
		name   string
		body   []byte
		reason focusgate.Reason
	}{
		{"after the conversation", trailing, focusgate.ReasonBypassModel},
		{"first", leading, focusgate.ReasonBypassModel},
		{"first, the conversation cut short", leading[:len(leading)/2], focusgate.ReasonBypassModel},
		{"after a conversation cut short", trailing[:len(trailing)/2], focusgate.ReasonNotJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: tt.body})
			if out.Status != focusgate.StatusSkipped || out.Reason != tt.reason || !bytes.Equal(got, tt.body) {
				t.Errorf("%s %s, body changed: %v; want skipped %s and the body as it came", out.Status, out.Reason, !bytes.Equal(got, tt.body), tt.reason)
			}
		})
	}
}

// The model a request is priced and bypassed by is the one the upstream
// reads: of duplicate members, the last.
func TestDuplicateModelMembersReadAsTheUpstreamDoes(t *testing.T) {
	laptop := readPage(t, "bgym-pr301_workarena_standard_laptop_form.txt")
	opts := goldenOptions()
	opts.BypassModels = []string{"o3*"}
	p := pipeline.New(opts)
	body := workload.ToolLoop("gpt-4.1", [2]string{"snapshot", laptop})
	dup := append(bytes.TrimSuffix(body, []byte("}")), []byte(`,"model":"o3"}`)...)
	if _, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: dup}); out.Reason != focusgate.ReasonBypassModel {
		t.Errorf("gpt-4.1 then o3: %s %s, want bypass-model (o3 is what the upstream reads)", out.Status, out.Reason)
	}
	dup = append(bytes.TrimSuffix(workload.ToolLoop("o3", [2]string{"snapshot", laptop}), []byte("}")), []byte(`,"model":"gpt-4.1"}`)...)
	if _, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: dup}); out.Status != focusgate.StatusPruned || out.Model != "gpt-4.1" {
		t.Errorf("o3 then gpt-4.1: %s %s (model %q), want pruned for gpt-4.1", out.Status, out.Reason, out.Model)
	}
}

// A client that cut a long output and saved it whole (opencode) shows the
// model a preview; the agent then reads the saved file, whose first lines
// are the preview's tree. That is reading on, pruned like any page; the same
// cut preview twice in a row is still a re-look.
func TestReadingOnPastACutIsNotARelook(t *testing.T) {
	laptop := readPage(t, "bgym-pr301_workarena_standard_laptop_form.txt")
	preview := laptop + "\n\n...126210 bytes truncated...\n\nThe tool call succeeded but the output was truncated. Full output saved to: /tmp/tool_1\n" +
		"Use the Task tool to have explore agent process this file with Grep and Read (with offset/limit)."
	var numbered strings.Builder
	lines := strings.Split(laptop, "\n")
	for i, l := range lines {
		fmt.Fprintf(&numbered, "%d: %s\n", i+1, l)
	}
	read := "<path>/tmp/tool_1</path>\n<type>file</type>\n<content>\n" + numbered.String() +
		fmt.Sprintf("\n(Output capped at 50 KB. Showing lines 1-%d. Use offset=%d to continue.)\n</content>", len(lines), len(lines)+1)

	p := newGoldenPipeline()
	send := func(steps ...[2]string) focusgate.Outcome {
		_, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: workload.ToolLoop("gpt-4.1", steps...)})
		return out
	}
	if out := send([2]string{"snapshot", preview}); out.Status != focusgate.StatusPruned {
		t.Fatalf("the cut preview: %s %s, want pruned", out.Status, out.Reason)
	}
	if out := send([2]string{"snapshot", preview}, [2]string{"read", read}); out.Status != focusgate.StatusPruned || out.Relook {
		t.Errorf("the saved file read after its cut preview: %s %s relook=%v, want pruned", out.Status, out.Reason, out.Relook)
	}
	if out := send([2]string{"snapshot", preview}, [2]string{"snapshot", preview}); out.Reason != focusgate.ReasonRelook {
		t.Errorf("the same cut preview twice: %s %s, want a re-look", out.Status, out.Reason)
	}
}
