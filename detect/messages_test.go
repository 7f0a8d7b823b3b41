package detect

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/focusgate/focusgate"
)

// capturedRequest is one line of a coding-agent capture's index.jsonl.
type capturedRequest struct {
	File      string `json:"file"`
	API       string `json:"api"`
	Snapshots []struct {
		Path  string `json:"path"`
		Chars int    `json:"chars"`
	} `json:"snapshots"`
	Target *string `json:"target"`
}

func readIndex(t *testing.T, dir string) []capturedRequest {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "index.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []capturedRequest
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r capturedRequest
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// Every page snapshot of the real Claude Code and Codex requests is found,
// in the string the capture names, in the right format, whole: as many
// tree lines as the snapshot has lines of that format.
func TestCodingAgentSnapshotsAreFound(t *testing.T) {
	for _, tc := range []struct {
		dir    string
		format Format
	}{
		{"claude-code/playwright-mcp-admin", "playwright"},
		{"claude-code/chrome-devtools-mcp-admin", "chrome-devtools"},
		{"codex/playwright-mcp-admin", "playwright"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			dir := filepath.Join("../testdata/agents", tc.dir)
			withPage := 0
			for _, r := range readIndex(t, dir) {
				body, err := os.ReadFile(filepath.Join(dir, r.File))
				if err != nil {
					t.Fatal(err)
				}
				api, err := focusgate.ParseAPI(r.API)
				if err != nil {
					t.Fatal(err)
				}
				obs, err := Find(body, api, Options{All: true})
				if err != nil {
					t.Fatalf("%s: %v", r.File, err)
				}
				if len(obs) != len(r.Snapshots) {
					t.Errorf("%s: %d observations, want %d", r.File, len(obs), len(r.Snapshots))
					continue
				}
				for i, s := range r.Snapshots {
					o := obs[i]
					withPage++
					if o.Format != tc.format {
						t.Errorf("%s: format %s, want %s", r.File, o.Format, tc.format)
					}
					text := gjson.GetBytes(body, s.Path).String()
					if len([]rune(text)) != s.Chars || !strings.Contains(text, o.Text) {
						t.Errorf("%s: the observation is not inside %s", r.File, s.Path)
					}
					if len(o.Text) < len(text)/2 || o.RawEnd <= o.RawStart {
						t.Errorf("%s: the tree found is %d of the string's %d bytes", r.File, len(o.Text), len(text))
					}
					if o.Path != s.Path {
						t.Errorf("%s: path %s, want %s", r.File, o.Path, s.Path)
					}
				}
			}
			if withPage == 0 {
				t.Fatal("no snapshot in the capture")
			}
		})
	}
}

// Claude Code's goal is the task the user typed, not the system reminders it
// puts before it, and its history is the tools it called, as name(input).
func TestClaudeCodeGoalAndHistory(t *testing.T) {
	body, err := os.ReadFile("../testdata/agents/claude-code/playwright-mcp-admin/07-messages-stream.json")
	if err != nil {
		t.Fatal(err)
	}
	obs, err := Find(body, focusgate.APIMessages, Options{})
	if err != nil || len(obs) != 1 {
		t.Fatalf("%d observations, %v", len(obs), err)
	}
	o := obs[0]
	if !strings.HasPrefix(o.Goal, "Open http://127.0.0.1:19081/admin in the browser and click Save employee.") || strings.Contains(o.Goal, "system-reminder") {
		t.Errorf("goal %q: want the user's task first, without system reminders", o.Goal)
	}
	for _, want := range []string{`mcp__playwright__browser_navigate({"url":"http://127.0.0.1:19081/admin"})`, "mcp__playwright__browser_snapshot({})"} {
		if !strings.Contains(o.History, want) {
			t.Errorf("history %q lacks %s", o.History, want)
		}
	}
	if strings.Contains(o.History, "browser_click") {
		t.Errorf("history %q holds a call made after the page", o.History)
	}
}

// Blocks that hold no page text are never searched: thinking (signed),
// tool_use inputs, images and documents, and unknown blocks; a tree in a
// text block or a tool result is found, also in the system prompt.
func TestMessagesBlocksSearched(t *testing.T) {
	tree := strings.TrimSuffix(readFile(t, "../testdata/axtrees/bgym-pr301_workarena_standard_laptop_form.txt"), "\n")
	js := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	for _, tt := range []struct {
		name, body string
		want       int
	}{
		{"text block", `{"messages":[{"role":"user","content":[{"type":"text","text":` + js(tree) + `}]}]}`, 1},
		{"content string", `{"messages":[{"role":"user","content":` + js(tree) + `}]}`, 1},
		{"tool_result string", `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":` + js(tree) + `}]}]}`, 1},
		{"tool_result text blocks", `{"messages":[{"role":"user","content":[{"content":[{"type":"text","text":` + js(tree) + `}],"type":"tool_result","tool_use_id":"t","cache_control":{"type":"ephemeral"}}]}]}`, 1},
		{"system string", `{"system":` + js(tree) + `,"messages":[]}`, 1},
		{"system blocks", `{"system":[{"type":"text","text":` + js(tree) + `}],"messages":[]}`, 1},
		{"thinking", `{"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":` + js(tree) + `,"signature":"x"}]}]}`, 0},
		{"assistant text", `{"messages":[{"role":"assistant","content":[{"type":"text","text":` + js(tree) + `}]}]}`, 0},
		{"tool_use input", `{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{"text":` + js(tree) + `}}]}]}`, 0},
		{"document", `{"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":` + js(tree) + `}}]}]}`, 0},
		{"unknown block with content", `{"messages":[{"role":"user","content":[{"type":"search_result","content":[{"type":"text","text":` + js(tree) + `}]}]}]}`, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obs, err := Find([]byte(tt.body), focusgate.APIMessages, Options{All: true})
			if err != nil || len(obs) != tt.want {
				t.Fatalf("%d observations, %v; want %d", len(obs), err, tt.want)
			}
			for _, o := range obs {
				if got, _ := json.Marshal(o.Text); !strings.Contains(tt.body[o.RawStart-1:o.RawEnd+1], string(got[1:len(got)-1])) {
					t.Errorf("raw span %d:%d does not hold the tree", o.RawStart, o.RawEnd)
				}
			}
		})
	}
}

// Of duplicate members, JSON readers keep the last, and they read escaped
// member names: so does detection, so that what is pruned and counted is
// what the upstream sees.
func TestDuplicateAndEscapedMembers(t *testing.T) {
	tree := strings.TrimSuffix(readFile(t, "../testdata/axtrees/bgym-pr301_workarena_standard_laptop_form.txt"), "\n")
	js := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	msg := func(content string) string { return `[{"role":"user","content":` + content + `}]` }
	for _, tt := range []struct {
		name  string
		api   focusgate.API
		body  string
		pages int
		model string
	}{
		{"model: the last wins", focusgate.APIChat, `{"model":"gpt-3.5-turbo","messages":[],"model":"gpt-4.1"}`, 0, "gpt-4.1"},
		{"model: an escaped name", focusgate.APIChat, `{"mod\u0065l":"gpt-4.1","messages":[]}`, 0, "gpt-4.1"},
		{"messages: the last wins, without a page", focusgate.APIChat, `{"messages":` + msg(js(tree)) + `,"messages":` + msg(`"hi"`) + `}`, 0, ""},
		{"messages: the last wins, with a page", focusgate.APIChat, `{"messages":` + msg(`"hi"`) + `,"messages":` + msg(js(tree)) + `}`, 1, ""},
		{"messages: an escaped name", focusgate.APIChat, `{"m\u0065ssages":` + msg(js(tree)) + `}`, 1, ""},
		{"content: the last wins", focusgate.APIChat, `{"messages":[{"role":"user","content":` + js(tree) + `,"content":"hi"}]}`, 0, ""},
		{"role: the last wins", focusgate.APIChat, `{"messages":[{"role":"user","content":` + js(tree) + `,"role":"assistant"}]}`, 0, ""},
		{"Messages content: the last wins", focusgate.APIMessages, `{"messages":[{"role":"user","content":[{"type":"text","text":` + js(tree) + `}],"content":"hi"}]}`, 0, ""},
		{"input: the last wins", focusgate.APIResponses, `{"input":` + js(tree) + `,"input":"hi"}`, 0, ""},
		// Escaped values of role and type read as the upstream reads them.
		{"role: escaped user", focusgate.APIChat, `{"messages":[{"role":"u\u0073er","content":` + js(tree) + `}]}`, 1, ""},
		{"role: escaped tool, content part type escaped", focusgate.APIChat, `{"messages":[{"role":"t\u006fol","content":[{"type":"t\u0065xt","text":` + js(tree) + `}]}]}`, 1, ""},
		{"Responses: escaped item type and role", focusgate.APIResponses, `{"input":[{"role":"\u0075ser","content":"Find it"},{"type":"function_c\u0061ll_output","call_id":"c","output":` + js(tree) + `}]}`, 1, ""},
		{"Responses: escaped part type", focusgate.APIResponses, `{"input":[{"role":"user","content":[{"type":"input_t\u0065xt","text":` + js(tree) + `}]}]}`, 1, ""},
		{"Messages: escaped role and tool_result", focusgate.APIMessages, `{"messages":[{"role":"us\u0065r","content":[{"type":"tool_r\u0065sult","tool_use_id":"t","content":` + js(tree) + `}]}]}`, 1, ""},
		{"Messages: escaped text block", focusgate.APIMessages, `{"messages":[{"role":"user","content":[{"type":"\u0074ext","text":` + js(tree) + `}]}]}`, 1, ""},
		{"Gemini: escaped user", focusgate.APIGemini, `{"contents":[{"role":"u\u0073er","parts":[{"text":` + js(tree) + `}]}]}`, 1, ""},
		{"Converse: escaped user and toolResult", focusgate.APIConverse, `{"messages":[{"role":"u\u0073er","content":[{"tool\u0052esult":{"toolUseId":"t","content":[{"t\u0065xt":` + js(tree) + `}]}}]}]}`, 1, ""},
		{"Converse: content, the last wins", focusgate.APIConverse, `{"messages":[{"role":"user","content":[{"text":` + js(tree) + `}],"content":[{"text":"hi"}]}]}`, 0, ""},
		{"Converse: toolResult content, the last wins", focusgate.APIConverse, `{"messages":[{"role":"user","content":[{"toolResult":{"content":[{"text":"hi"}],"content":[{"text":` + js(tree) + `}]}}]}]}`, 1, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obs, err := Find([]byte(tt.body), tt.api, Options{All: true})
			if err != nil || len(obs) != tt.pages {
				t.Errorf("%d observations, %v; want %d", len(obs), err, tt.pages)
			}
			if tt.model != "" {
				if r, err := (*Finder)(nil).Read([]byte(tt.body), tt.api, Options{}); err != nil || r.Model != tt.model {
					t.Errorf("Read: model %q, %v; want %q", r.Model, err, tt.model)
				}
			}
		})
	}
	// An assistant's turn, its role escaped, is history, not a place for a
	// page.
	for _, tt := range []struct {
		name string
		api  focusgate.API
		body string
	}{
		{"chat", focusgate.APIChat, `{"messages":[{"role":"user","content":"Order a laptop"},{"role":"\u0061ssistant","content":` + js(tree) + `},` +
			`{"role":"\u0061ssistant","content":"Opening the catalog."},{"role":"user","content":` + js(tree) + `}]}`},
		{"Messages", focusgate.APIMessages, `{"messages":[{"role":"user","content":"Order a laptop"},{"role":"assist\u0061nt","content":[{"type":"text","text":` + js(tree) + `}]},` +
			`{"role":"assist\u0061nt","content":[{"type":"text","text":"Opening the catalog."}]},{"role":"user","content":[{"type":"text","text":` + js(tree) + `}]}]}`},
		{"Gemini", focusgate.APIGemini, `{"contents":[{"role":"user","parts":[{"text":"Order a laptop"}]},{"role":"m\u006fdel","parts":[{"text":` + js(tree) + `}]},` +
			`{"role":"m\u006fdel","parts":[{"text":"Opening the catalog."}]},{"role":"user","parts":[{"text":` + js(tree) + `}]}]}`},
		{"Converse", focusgate.APIConverse, `{"messages":[{"role":"user","content":[{"text":"Order a laptop"}]},{"role":"assist\u0061nt","content":[{"text":` + js(tree) + `}]},` +
			`{"role":"assist\u0061nt","content":[{"text":"Opening the catalog."}]},{"role":"user","content":[{"text":` + js(tree) + `}]}]}`},
	} {
		t.Run("escaped assistant: "+tt.name, func(t *testing.T) {
			obs, err := Find([]byte(tt.body), tt.api, Options{All: true})
			if err != nil || len(obs) != 1 {
				t.Fatalf("%d observations, %v; want the user's page alone", len(obs), err)
			}
			if !strings.Contains(obs[0].History, "Opening the catalog.") {
				t.Errorf("history %.200q... does not end with the assistant's words", obs[0].History[max(0, len(obs[0].History)-200):])
			}
		})
	}
}

// Read counts the messages of a request as its API defines them: the system
// prompt or instructions are no message, and a Messages API message counts
// once whatever blocks it holds.
func TestReadCountsMessages(t *testing.T) {
	for _, tt := range []struct {
		name string
		api  focusgate.API
		body string
		want int
	}{
		{"messages: one tool output", focusgate.APIMessages,
			`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}]}`, 1},
		{"messages: one message with system", focusgate.APIMessages,
			`{"system":"Order a laptop","messages":[{"role":"user","content":"x"}]}`, 1},
		{"messages: system blocks after the message", focusgate.APIMessages,
			`{"messages":[{"role":"user","content":"x"}],"system":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, 1},
		{"messages: text, tool results and text in one message", focusgate.APIMessages,
			`{"system":"s","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"tool_result","tool_use_id":"t","content":"x"},{"type":"text","text":"b"}]}]}`, 1},
		{"messages: a conversation", focusgate.APIMessages,
			`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}`, 3},
		{"messages: system alone", focusgate.APIMessages, `{"system":"s","messages":[]}`, 0},
		{"chat: a system message is a message", focusgate.APIChat,
			`{"messages":[{"role":"system","content":"s"},{"role":"user","content":"x"}]}`, 2},
		{"responses: instructions and a string", focusgate.APIResponses, `{"instructions":"s","input":"x"}`, 1},
		{"gemini: a turn of text and a function response, with a system instruction", focusgate.APIGemini,
			`{"systemInstruction":{"parts":[{"text":"s"}]},"contents":[{"role":"user","parts":[{"text":"a"},{"functionResponse":{"name":"f","response":{"output":"o"}}},{"text":"b"}]}]}`, 1},
		{"gemini: two turns", focusgate.APIGemini, `{"contents":[{"role":"user","parts":[{"text":"a"}]},{"role":"model","parts":[{"text":"b"}]}]}`, 2},
		{"converse: a turn of text and a tool result, with a system prompt", focusgate.APIConverse,
			`{"system":[{"text":"s"}],"messages":[{"role":"user","content":[{"text":"a"},{"toolResult":{"toolUseId":"t","content":[{"text":"o"}]}},{"text":"b"}]}]}`, 1},
		{"converse: two turns", focusgate.APIConverse, `{"messages":[{"role":"user","content":[{"text":"a"}]},{"role":"assistant","content":[{"text":"b"}]}]}`, 2},
		{"responses: items", focusgate.APIResponses,
			`{"instructions":"s","input":[{"role":"user","content":"a"},{"type":"function_call_output","call_id":"c","output":"o"}]}`, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := (*Finder)(nil).Read([]byte(tt.body), tt.api, Options{})
			if err != nil || r.Messages != tt.want {
				t.Errorf("Messages = %d, %v; want %d", r.Messages, err, tt.want)
			}
		})
	}
}
