package holdout

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
)

// Two requests of one conversation (its first step and a later one, with
// cache markers moved, tool calls and new pages added) have the same key;
// a change to what identifies a conversation gives another.
func TestConversationKeyPerAPI(t *testing.T) {
	tests := []struct {
		name        string
		api         focusgate.API
		first, late string // two steps of one conversation
		other       string // another conversation
	}{
		{
			"chat, multi-turn", focusgate.APIChat,
			`{"model":"gpt-4.1","messages":[{"role":"system","content":"You browse."},{"role":"user","content":"Buy a laptop."}]}`,
			`{"model":"gpt-4.1","stream":true,"messages":[{"role":"system","content":"You browse."},{"role":"user","content":[{"type":"text","text":"Buy a laptop."}]},{"role":"assistant","tool_calls":[{"id":"c1"}]},{"role":"tool","content":"- button \"Buy\" [ref=e1]"}]}`,
			`{"model":"gpt-4.1","messages":[{"role":"system","content":"You browse."},{"role":"user","content":"Buy a phone."}]}`,
		},
		{
			"chat, one prompt per step (AgentLab)", focusgate.APIChat,
			`{"messages":[{"role":"system","content":"You are a web agent."},{"role":"user","content":[{"type":"text","text":"# Instructions\nAct.\n\n## Goal:\n"},{"type":"text","text":"Order 10 laptops"},{"type":"text","text":"\n# Observation of current step:\n[12] button 'A'"}]}]}`,
			`{"messages":[{"role":"system","content":"You are a web agent."},{"role":"user","content":[{"type":"text","text":"# Instructions\nAct.\n\n## Goal:\n"},{"type":"text","text":"Order 10 laptops"},{"type":"text","text":"\n# Observation of current step:\n[40] link 'B'\n# History of interaction with the task:\nclick('12')"}]}]}`,
			`{"messages":[{"role":"system","content":"You are a web agent."},{"role":"user","content":[{"type":"text","text":"# Instructions\nAct.\n\n## Goal:\n"},{"type":"text","text":"Order 2 laptops"},{"type":"text","text":"\n# Observation of current step:\n[12] button 'A'"}]}]}`,
		},
		{
			"chat, WebArena objective", focusgate.APIChat,
			`{"messages":[{"role":"user","content":"OBSERVATION:\n[1] link 'a'\nURL: http://x/1\nOBJECTIVE: Find the cheapest TV\nPREVIOUS ACTION: None"}]}`,
			`{"messages":[{"role":"user","content":"OBSERVATION:\n[7] link 'b'\nURL: http://x/2\nOBJECTIVE: Find the cheapest TV\nPREVIOUS ACTION: click [1]"}]}`,
			`{"messages":[{"role":"user","content":"OBSERVATION:\n[1] link 'a'\nURL: http://x/1\nOBJECTIVE: Find the dearest TV\nPREVIOUS ACTION: None"}]}`,
		},
		{
			"responses", focusgate.APIResponses,
			`{"model":"gpt-5","instructions":"You are Codex.","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"sandbox"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"Fix the login page."}]}]}`,
			`{"model":"gpt-5","instructions":"You are Codex.","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"sandbox"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"Fix the login page."}]},{"type":"function_call","call_id":"a"},{"type":"function_call_output","call_id":"a","output":"ok"}]}`,
			`{"model":"gpt-5","instructions":"You are Codex.","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"sandbox"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"Fix the signup page."}]}]}`,
		},
		{
			"responses, a named conversation", focusgate.APIResponses,
			`{"conversation":"conv_1","input":"Hello"}`,
			`{"conversation":{"id":"conv_1"},"input":[{"type":"function_call_output","call_id":"a","output":"ok"}]}`,
			`{"conversation":"conv_2","input":"Hello"}`,
		},
		{
			"messages", focusgate.APIMessages,
			`{"model":"claude-sonnet-4-5","system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"Book a flight.","cache_control":{"type":"ephemeral"}}]}]}`,
			`{"model":"claude-sonnet-4-5","system":[{"type":"text","text":"You are Claude Code."}],"messages":[{"role":"user","content":[{"type":"text","text":"Book a flight."}]},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"browser_snapshot","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"- Page Snapshot:","cache_control":{"type":"ephemeral"}}]}]}`,
			`{"model":"claude-sonnet-4-5","system":[{"type":"text","text":"You are Claude Code."}],"messages":[{"role":"user","content":"Book a hotel."}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, ok1 := conversationKey(tt.api, []byte(tt.first))
			late, ok2 := conversationKey(tt.api, []byte(tt.late))
			other, ok3 := conversationKey(tt.api, []byte(tt.other))
			if !ok1 || !ok2 || !ok3 {
				t.Fatalf("a body had no key: %v %v %v", ok1, ok2, ok3)
			}
			if first != late {
				t.Errorf("two steps of one conversation differ:\n%q\n%q", first, late)
			}
			if first == other {
				t.Errorf("two conversations share the key %q", first)
			}
		})
	}
}

// Gemini is one more entry of keyers: systemInstruction and the first user
// turn of contents.
func TestGeminiKey(t *testing.T) {
	first := `{"systemInstruction":{"parts":[{"text":"You are Gemini CLI."}]},"contents":[{"role":"user","parts":[{"text":"Open the docs."}]}]}`
	late := `{"systemInstruction":{"parts":[{"text":"You are Gemini CLI."}]},"contents":[{"role":"user","parts":[{"text":"Open the docs."}]},{"role":"model","parts":[{"functionCall":{"name":"browser_snapshot"}}]},{"role":"user","parts":[{"functionResponse":{"response":{"output":"- Page Snapshot:"}}}]}]}`
	i1, u1 := geminiKey(first)
	i2, u2 := geminiKey(late)
	if i1 != "You are Gemini CLI." || u1 != "Open the docs." || i1 != i2 || u1 != u2 {
		t.Errorf("gemini keys: %q %q, then %q %q", i1, u1, i2, u2)
	}
}

// Converse is keyed like Messages: its system text blocks and the text
// blocks of its first user message, whatever cache points, tool results and
// tool calls come and go around them.
func TestConverseKey(t *testing.T) {
	first := `{"system":[{"text":"You are a browsing agent."},{"cachePoint":{"type":"default"}}],"messages":[{"role":"user","content":[{"text":"Add the Summit Parka to the cart."}]}],"inferenceConfig":{"maxTokens":1024}}`
	late := `{"system":[{"text":"You are a browsing agent."}],"messages":[{"role":"user","content":[{"text":"Add the Summit Parka to the cart."},{"cachePoint":{"type":"default"}}]},` +
		`{"role":"assistant","content":[{"text":"Looking."},{"toolUse":{"toolUseId":"t1","name":"browser_snapshot","input":{}}}]},` +
		`{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"- generic [ref=e1]"}]}}]}],"toolConfig":{"tools":[]}}`
	other := `{"system":[{"text":"You are a browsing agent."}],"messages":[{"role":"user","content":[{"text":"Add the Harbor Boots to the cart."}]}]}`
	keys := make([]string, 3)
	for i, body := range []string{first, late, other} {
		key, ok := conversationKey(focusgate.APIConverse, []byte(body))
		if !ok {
			t.Fatalf("body %d has no key", i)
		}
		keys[i] = key
	}
	if keys[0] != keys[1] {
		t.Errorf("two steps of one conversation differ:\n%q\n%q", keys[0], keys[1])
	}
	if keys[0] == keys[2] {
		t.Errorf("two conversations share the key %q", keys[0])
	}
	if want := "converse\x00You are a browsing agent.\x00Add the Summit Parka to the cart."; keys[0] != want {
		t.Errorf("key %q, want %q", keys[0], want)
	}
	if key, ok := conversationKey(focusgate.APIConverse, []byte(`{"messages":[{"role":"user","content":[{"toolResult":{"toolUseId":"t","content":[{"text":"x"}]}}]}]}`)); ok {
		t.Errorf("a lone tool result: key %q, want none", key)
	}
}

// Every API the gateway routes has a keyer: a request of an API without
// one would never be assigned to an arm.
func TestEveryAPIHasAKeyer(t *testing.T) {
	for _, api := range focusgate.APIs {
		if _, ok := keyers[api]; !ok {
			t.Errorf("%v has no keyer", api)
		}
	}
}

// A body that names no conversation is not assigned: it is pruned as usual
// and not accounted for.
func TestNoKey(t *testing.T) {
	for name, body := range map[string]string{
		"not JSON":         `{"messages":[`,
		"no messages":      `{"model":"gpt-4.1"}`,
		"lone tool result": `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}]}`,
		"empty user":       `{"messages":[{"role":"user","content":""}]}`,
	} {
		if key, ok := conversationKey(focusgate.APIMessages, []byte(body)); ok {
			t.Errorf("%s: key %q, want none", name, key)
		}
	}
	// A Responses step chained to the one before without its first turn:
	// its instructions alone would make all of the agent's conversations
	// one.
	chained := `{"instructions":"You browse.","previous_response_id":"resp_1","input":[{"type":"function_call_output","call_id":"a","output":"ok"}]}`
	if key, ok := conversationKey(focusgate.APIResponses, []byte(chained)); ok {
		t.Errorf("chained step: key %q, want none", key)
	}
	withTurn := `{"instructions":"You browse.","previous_response_id":"resp_1","input":[{"role":"user","content":"Go on."}]}`
	if _, ok := conversationKey(focusgate.APIResponses, []byte(withTurn)); !ok {
		t.Error("a chained step with a user turn has no key")
	}
}

// The recorded AgentLab request keys on its system prompt and goal, not on
// its page.
func TestRecordedAgentLabRequestKeysOnItsGoal(t *testing.T) {
	body, err := os.ReadFile("../testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json")
	if err != nil {
		t.Fatal(err)
	}
	key, ok := conversationKey(focusgate.APIChat, body)
	if !ok {
		t.Fatal("no key")
	}
	if len(key) > 2000 {
		t.Errorf("the key is %d bytes long: it holds more than the instructions and the goal", len(key))
	}
	for _, want := range []string{"You are an agent trying to solve a web task", "## Goal:", "Standard Laptop"} {
		if !strings.Contains(key, want) {
			t.Errorf("the key lacks %q", want)
		}
	}
	if strings.Contains(key, "AXTree") {
		t.Error("the key holds the page")
	}
}

// Every request of each recorded agent run, as the real tools sent them,
// names the same conversation, so a run stays in one arm from its first
// request to its last. Stagehand is the exception by design: each of its
// calls (observe, act, extract) is a prompt of its own, and each is a
// conversation of one.
func TestRecordedRunsStayInOneConversation(t *testing.T) {
	dirs, _ := filepath.Glob("../testdata/agents/*/*")
	runs := 0
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		if len(files) < 2 || strings.Contains(dir, "stagehand") {
			continue
		}
		slices.Sort(files)
		keys := map[string][]string{}
		for _, f := range files {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			api, ok := recordedAPI(filepath.Base(f))
			if !ok {
				continue
			}
			key, ok := conversationKey(api, body)
			if !ok {
				t.Errorf("%s: no conversation key", f)
				continue
			}
			keys[key] = append(keys[key], filepath.Base(f))
		}
		if len(keys) > 0 {
			runs++
		}
		if len(keys) > 1 {
			t.Errorf("%s: %d conversations, want 1:", dir, len(keys))
			for k, files := range keys {
				t.Logf("  %v: %.200q", files, k)
			}
		}
	}
	if runs < 10 {
		t.Errorf("only %d recorded runs found", runs)
	}
}

// recordedAPI is the API a recorded body went to, from its file name
// (NN-<endpoint>[-stream].json); false for a body sized by count_tokens,
// which is no step.
func recordedAPI(name string) (focusgate.API, bool) {
	switch {
	case strings.Contains(name, "count_tokens"):
		return 0, false
	case strings.Contains(name, "GenerateContent"):
		return focusgate.APIGemini, true
	case strings.Contains(name, "responses"):
		return focusgate.APIResponses, true
	case strings.Contains(name, "messages"):
		return focusgate.APIMessages, true
	}
	return focusgate.APIChat, true
}
