package detect

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
)

// geminiCLIBody is a Gemini CLI conversation: the session context and the
// task, a function call, its response holding output (the page, wrapped as
// Gemini CLI wraps MCP output), a thought part and a function call of the
// model's.
func geminiCLIBody(t testing.TB, output string) []byte {
	t.Helper()
	return rawJSON(t, map[string]any{
		"contents": []any{
			map[string]any{"role": "user", "parts": []any{
				map[string]any{"text": "<session_context>\nThis is the Gemini CLI. Today's date is Monday.\n</session_context>"},
				map[string]any{"text": "Add the Summit Parka to the cart."},
			}},
			map[string]any{"role": "model", "parts": []any{
				map[string]any{"text": "Looking at the page first.", "thought": true},
				map[string]any{"functionCall": map[string]any{"name": "browser_snapshot", "args": map[string]any{}}, "thoughtSignature": "c2lnbmF0dXJl"},
			}},
			map[string]any{"role": "user", "parts": []any{
				map[string]any{"functionResponse": map[string]any{"id": "browser_snapshot-1", "name": "browser_snapshot",
					"response": map[string]any{"output": "<untrusted_context>\n" + output + "\n</untrusted_context>"}}},
			}},
		},
		"systemInstruction": map[string]any{"role": "user", "parts": []any{map[string]any{"text": "You are an interactive CLI agent."}}},
		"tools":             []any{map[string]any{"functionDeclarations": []any{map[string]any{"name": "browser_snapshot"}}}},
		"generationConfig":  map[string]any{"temperature": 0},
	})
}

func TestGeminiBodies(t *testing.T) {
	page := readFile(t, "testdata/formats/playwright.txt")
	tree := page[strings.Index(page, "- generic"):strings.LastIndex(page, "\n```")]
	omitted := strings.Index(tree, "  - main") // a line boundary well inside the tree
	tests := []struct {
		name string
		body []byte
		// paths of the observations found, oldest first
		paths []string
		goal  string
		// texts the observations start with
		starts []string
	}{
		{
			name:   "a Gemini CLI conversation: the page in the function response's output, the task as goal",
			body:   geminiCLIBody(t, page),
			paths:  []string{"contents.2.parts.0.functionResponse.response.output"},
			goal:   "Add the Summit Parka to the cart.",
			starts: []string{"- generic [active] [ref=e1]:"},
		},
		{
			name: "Gemini CLI's truncation: head and tail are trees of their own, the marker line neither's",
			body: geminiCLIBody(t, "Output too large. Showing first 8,000 and last 32,000 characters. For full output see: /tmp/out.txt\n"+
				tree[:omitted]+"\n\n... [12,345 characters omitted] ...\n\n"+tree[omitted:]),
			paths:  []string{"contents.2.parts.0.functionResponse.response.output", "contents.2.parts.0.functionResponse.response.output"},
			goal:   "Add the Summit Parka to the cart.",
			starts: []string{"- generic [active] [ref=e1]:", "  - main"},
		},
		{
			name: "a page in a user text part, in a countTokens body",
			body: mustJSON(t, map[string]any{"generateContentRequest": map[string]any{"model": "models/gemini-2.5-flash", "contents": []any{
				map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Find the parka.\n" + page}}},
			}}}),
			paths:  []string{"generateContentRequest.contents.0.parts.0.text"},
			goal:   "Find the parka.\n### Page",
			starts: []string{"- generic [active] [ref=e1]:"},
		},
		{
			name: "never in a thought, a function call's args, the system instruction or a model turn",
			body: mustJSON(t, map[string]any{
				"systemInstruction": map[string]any{"parts": []any{map[string]any{"text": page}}},
				"contents": []any{
					map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Find the parka."}}},
					map[string]any{"role": "model", "parts": []any{
						map[string]any{"text": page, "thought": true},
						map[string]any{"text": page},
						map[string]any{"functionCall": map[string]any{"name": "type", "args": map[string]any{"text": page}}},
					}},
				},
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, o := range findAt(t, tt.body, focusgate.APIGemini, tt.paths) {
				if !strings.HasPrefix(o.Text, tt.starts[i]) {
					t.Errorf("observation %d starts %q, want %q", i, firstLine(o.Text), tt.starts[i])
				}
				if strings.Contains(o.Text, "characters omitted") {
					t.Errorf("observation %d holds the truncation marker", i)
				}
				if !strings.HasPrefix(o.Goal, tt.goal) {
					t.Errorf("goal %q, want %q", o.Goal, tt.goal)
				}
			}
		})
	}
}

// rawJSON is mustJSON without HTML escaping, as Gemini CLI writes its
// bodies: "<session_context>", not "\u003csession_context\u003e".
func rawJSON(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// A Gemini body read as another API holds no conversation, and another
// API's body read as Gemini's neither: each API's walker reads only its own
// members.
func TestWalkersReadOnlyTheirAPIsMembers(t *testing.T) {
	page := readFile(t, "testdata/formats/playwright.txt")
	gemini := geminiCLIBody(t, page)
	chat := chatBody(t, message{Role: "user", Content: "Find the parka.\n" + page})
	for _, api := range []focusgate.API{focusgate.APIChat, focusgate.APIResponses, focusgate.APIMessages} {
		if obs, err := Find(gemini, api, Options{All: true}); err != nil || len(obs) != 0 {
			t.Errorf("a Gemini body read as %v: %d observations, %v", api, len(obs), err)
		}
	}
	if obs, err := Find(chat, focusgate.APIGemini, Options{All: true}); err != nil || len(obs) != 0 {
		t.Errorf("a chat body read as gemini: %d observations, %v", len(obs), err)
	}
}
