package detect

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
)

// aiSDKConverse is a Converse tool loop as the AI SDK's Bedrock provider
// sends it (a real capture, see testdata/README.md): the task, a snapshot
// tool's result holding the page as text, and a JSON tool's result, which
// the AI SDK stringifies into a text block.
const aiSDKConverse = "testdata/requests/converse_ai_sdk_playwright_mcp.json"

// converseBody is a Converse body of the given messages, with the members
// around them that are never read.
func converseBody(t testing.TB, messages ...any) []byte {
	t.Helper()
	return rawJSON(t, map[string]any{
		"system":          []any{map[string]any{"text": "You are a browsing agent."}, map[string]any{"cachePoint": map[string]any{"type": "default"}}},
		"messages":        messages,
		"inferenceConfig": map[string]any{"maxTokens": 1024},
		"toolConfig":      map[string]any{"tools": []any{map[string]any{"toolSpec": map[string]any{"name": "browser_snapshot", "inputSchema": map[string]any{"json": map[string]any{"type": "object"}}}}}},
	})
}

func converseTurn(role string, blocks ...any) any {
	return map[string]any{"role": role, "content": blocks}
}

func TestConverseBodies(t *testing.T) {
	page := readFile(t, "testdata/formats/playwright.txt")
	task := converseTurn("user", map[string]any{"text": "Add the Summit Parka to the cart."})
	snapshotCall := converseTurn("assistant",
		map[string]any{"reasoningContent": map[string]any{"reasoningText": map[string]any{"text": "I need the page.", "signature": "c2ln"}}},
		map[string]any{"toolUse": map[string]any{"toolUseId": "t1", "name": "browser_snapshot", "input": map[string]any{}}})
	result := func(content ...any) any {
		return converseTurn("user", map[string]any{"toolResult": map[string]any{"toolUseId": "t1", "content": content, "status": "success"}})
	}
	tests := []struct {
		name  string
		body  []byte
		paths []string // of the observations found, oldest first
		goal  string
		// texts the observations start with, and how often each is
		// escaped inside its string
		starts  []string
		nested  []int
		history string
	}{
		{
			name:    "the AI SDK's tool loop: a page in a toolResult's text, and one in a JSON text",
			body:    []byte(readFile(t, aiSDKConverse)),
			paths:   []string{"messages.2.content.0.toolResult.content.0.text", "messages.4.content.0.toolResult.content.0.text"},
			goal:    "Add the Summit Parka to the cart.",
			starts:  []string{"- generic [active] [ref=e1]:", "- generic [active] [ref=e1]:"},
			nested:  []int{0, 1},
			history: "Taking a snapshot first.\n\nbrowser_snapshot({})",
		},
		{
			name:    "a page in a toolResult's text, after an image block",
			body:    converseBody(t, task, snapshotCall, result(map[string]any{"image": map[string]any{"format": "png", "source": map[string]any{"bytes": "iVBORw0KGgo="}}}, map[string]any{"text": page})),
			paths:   []string{"messages.2.content.0.toolResult.content.1.text"},
			goal:    "Add the Summit Parka to the cart.",
			starts:  []string{"- generic [active] [ref=e1]:"},
			nested:  []int{0},
			history: "browser_snapshot({})",
		},
		{
			name:   "a page in a toolResult's json value",
			body:   converseBody(t, task, snapshotCall, result(map[string]any{"json": map[string]any{"url": "http://shop/", "snapshot": page}})),
			paths:  []string{"messages.2.content.0.toolResult.content.0.json.snapshot"},
			goal:   "Add the Summit Parka to the cart.",
			starts: []string{"- generic [active] [ref=e1]:"},
			nested: []int{0},
		},
		{
			name:   "a page in the user's text, the words around it the goal",
			body:   converseBody(t, converseTurn("user", map[string]any{"text": "Find the parka.\n" + page}, map[string]any{"cachePoint": map[string]any{"type": "default"}})),
			paths:  []string{"messages.0.content.0.text"},
			goal:   "Find the parka.\n### Page",
			starts: []string{"- generic [active] [ref=e1]:"},
			nested: []int{0},
		},
		{
			name:   "with no user text, the system prompt is the goal",
			body:   converseBody(t, converseTurn("user", map[string]any{"toolResult": map[string]any{"toolUseId": "t1", "content": []any{map[string]any{"text": page}}}})),
			paths:  []string{"messages.0.content.0.toolResult.content.0.text"},
			goal:   "You are a browsing agent.",
			starts: []string{"- generic [active] [ref=e1]:"},
			nested: []int{0},
		},
		{
			name: "never in the system prompt, a toolUse's input, reasoning, an assistant's text, guardContent, a document or the tool config",
			body: rawJSON(t, map[string]any{
				"system": []any{map[string]any{"text": page}, map[string]any{"guardContent": map[string]any{"text": map[string]any{"text": page}}}},
				"messages": []any{
					converseTurn("user", map[string]any{"text": "Find the parka."},
						map[string]any{"guardContent": map[string]any{"text": map[string]any{"text": page}}},
						map[string]any{"document": map[string]any{"format": "txt", "name": "page", "source": map[string]any{"text": page}}}),
					converseTurn("assistant",
						map[string]any{"reasoningContent": map[string]any{"reasoningText": map[string]any{"text": page}}},
						map[string]any{"text": page},
						map[string]any{"toolUse": map[string]any{"toolUseId": "t1", "name": "type", "input": map[string]any{"text": page}}}),
				},
				"toolConfig":                   map[string]any{"tools": []any{map[string]any{"toolSpec": map[string]any{"name": "x", "description": page}}}},
				"additionalModelRequestFields": map[string]any{"note": page},
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, o := range findAt(t, tt.body, focusgate.APIConverse, tt.paths) {
				if !strings.HasPrefix(o.Text, tt.starts[i]) || o.Nested != tt.nested[i] {
					t.Errorf("observation %d starts %q, nested %d; want %q, %d", i, firstLine(o.Text), o.Nested, tt.starts[i], tt.nested[i])
				}
				if !strings.HasPrefix(o.Goal, tt.goal) {
					t.Errorf("goal %q, want %q", o.Goal, tt.goal)
				}
				if !strings.HasPrefix(o.History, tt.history) || strings.Contains(o.History, "signature") || strings.Contains(o.History, "I need the page") {
					t.Errorf("history %q, want it to start with %q, without reasoning", o.History, tt.history)
				}
			}
		})
	}
}

// The second page of the AI SDK's loop has the first call and its result
// before it: its history is both calls, in order.
func TestConverseHistory(t *testing.T) {
	obs, err := Find([]byte(readFile(t, aiSDKConverse)), focusgate.APIConverse, Options{})
	if err != nil || len(obs) != 1 {
		t.Fatalf("%d observations, %v", len(obs), err)
	}
	want := "Taking a snapshot first.\n\nbrowser_snapshot({})\n\npage_state({\"full\":true})"
	if obs[0].History != want {
		t.Errorf("history %q, want %q", obs[0].History, want)
	}
}

// The model of a Converse request is named by its path: a body's "model"
// or "modelId" is not what Bedrock reads, and Read reports none.
func TestConverseModelIsInThePath(t *testing.T) {
	body := `{"modelId":"us.amazon.nova-pro-v1:0","model":"x","messages":[{"role":"user","content":[{"text":"hi"}]}]}`
	r, err := (*Finder)(nil).Read([]byte(body), focusgate.APIConverse, Options{})
	if err != nil || r.Model != "" || r.Messages != 1 {
		t.Errorf("Read: model %q, %d messages, %v; want none, 1", r.Model, r.Messages, err)
	}
}

// A Converse body holds blocks keyed by their member, which the other
// APIs' walkers do not read as pages, and the Converse walker reads none of
// the others' tool results.
func TestConverseWalkerReadsOnlyConverse(t *testing.T) {
	page := readFile(t, "testdata/formats/playwright.txt")
	js := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	converse := converseBody(t, converseTurn("user", map[string]any{"toolResult": map[string]any{"toolUseId": "t", "content": []any{map[string]any{"text": page}}}}))
	for _, api := range []focusgate.API{focusgate.APIChat, focusgate.APIResponses, focusgate.APIMessages, focusgate.APIGemini} {
		if obs, err := Find(converse, api, Options{All: true}); err != nil || len(obs) != 0 {
			t.Errorf("a Converse body read as %v: %d observations, %v", api, len(obs), err)
		}
	}
	for name, body := range map[string]string{
		"chat tool message":    `{"messages":[{"role":"user","content":"Find it"},{"role":"tool","tool_call_id":"c","content":` + js(page) + `}]}`,
		"Messages tool_result": `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":` + js(page) + `}]}]}`,
		"Gemini contents":      string(geminiCLIBody(t, page)),
	} {
		if obs, err := Find([]byte(body), focusgate.APIConverse, Options{All: true}); err != nil || len(obs) != 0 {
			t.Errorf("%s read as converse: %d observations, %v", name, len(obs), err)
		}
	}
}
