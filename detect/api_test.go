package detect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/focusgate/focusgate"
)

func TestAPIOf(t *testing.T) {
	tests := []struct {
		name string
		body string
		want focusgate.API
	}{
		{"chat", `{"model":"gpt-4.1","messages":[{"role":"system","content":"x"},{"role":"user","content":"y"}]}`, focusgate.APIChat},
		{"chat tool loop", `{"messages":[{"role":"assistant","tool_calls":[]},{"role":"tool","tool_call_id":"1","content":"z"}]}`, focusgate.APIChat},
		{"user and assistant strings only", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":10}`, focusgate.APIChat},
		{"responses input", `{"model":"gpt-4.1","input":"hi"}`, focusgate.APIResponses},
		{"responses instructions only", `{"instructions":"be brief"}`, focusgate.APIResponses},
		{"messages with system", `{"model":"claude","system":"x","messages":[{"role":"user","content":"y"}]}`, focusgate.APIMessages},
		{"messages with tool_result", `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"p"}]}]}`, focusgate.APIMessages},
		{"messages with thinking", `{"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"}]}]}`, focusgate.APIMessages},
		{"converse text blocks", `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, focusgate.APIConverse},
		{"converse tool result", `{"messages":[{"role":"user","content":[{"toolResult":{"toolUseId":"t","content":[{"text":"p"}]}}]}]}`, focusgate.APIConverse},
		{"converse system blocks", `{"system":[{"text":"be brief"},{"cachePoint":{"type":"default"}}],"messages":[{"role":"user","content":"hi"}]}`, focusgate.APIConverse},
		{"converse inferenceConfig", `{"messages":[],"inferenceConfig":{"maxTokens":10}}`, focusgate.APIConverse},
		{"converse toolConfig", `{"toolConfig":{"tools":[]},"messages":[{"role":"user","content":"hi"}]}`, focusgate.APIConverse},
		{"messages system blocks are typed", `{"system":[{"type":"text","text":"x"}],"messages":[{"role":"user","content":[{"type":"text","text":"y"}]}]}`, focusgate.APIMessages},
		{"chat parts are typed", `{"messages":[{"role":"user","content":[{"type":"text","text":"y"},{"type":"image_url","image_url":{"url":"x"}}]}]}`, focusgate.APIChat},
		{"gemini with a generation config", `{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{}}`, focusgate.APIGemini},
		{"not JSON", `nope`, focusgate.APIChat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := APIOf([]byte(tt.body)); got != tt.want {
				t.Errorf("APIOf = %s, want %s", got, tt.want)
			}
		})
	}
}

// Every captured agent body is told apart by its shape alone: the folder
// names its endpoint.
func TestAPIOfCapturedBodies(t *testing.T) {
	files, err := filepath.Glob("../testdata/agents/*/*/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no captured bodies: %v", err)
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want := focusgate.APIChat
		switch base := filepath.Base(f); {
		case strings.Contains(base, "GenerateContent") || strings.Contains(base, "countTokens"):
			want = focusgate.APIGemini
		case strings.Contains(base, "converse"):
			want = focusgate.APIConverse
		case strings.Contains(base, "responses"):
			want = focusgate.APIResponses
		case bothShapes(body):
			// Valid as a chat body and as a Messages body (a lone
			// count_tokens message with string content): chat, as APIOf
			// says; the gateway knows such a body's API from its route.
		case strings.Contains(base, "messages") || strings.Contains(base, "count_tokens"):
			want = focusgate.APIMessages
		}
		if got := APIOf(body); got != want {
			t.Errorf("%s: APIOf = %s, want %s", f, got, want)
		}
	}
}

// bothShapes says a body is valid in the chat and the Messages API alike:
// no system prompt and only string contents.
func bothShapes(body []byte) bool {
	if gjson.GetBytes(body, "system").Exists() {
		return false
	}
	only := true
	gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
		only = m.Get("content").Type == gjson.String
		return only
	})
	return only
}
