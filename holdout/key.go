package holdout

import (
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/focusgate/focusgate"
)

// A conversation is known by what stays the same from its first request to
// its last: the instructions the agent was given and the first thing the
// user asked. Every later request of the conversation repeats both, so each
// request, on any replica, names its conversation without anything being
// stored. What an agent must keep stable for its conversation to stay in one
// arm is exactly this text; blocks that move between requests (Anthropic's
// cache_control markers, images, tool calls) are not part of it.
//
// keyers says, per API, where that text is. A new API is one more entry.
var keyers = map[focusgate.API]func(body string) (instructions, firstUser string){
	focusgate.APIChat:      chatKey,
	focusgate.APIResponses: responsesKey,
	focusgate.APIMessages:  messagesKey,
	focusgate.APIGemini:    geminiKey,
	// Converse holds its instructions and turns where Messages does, in
	// blocks known by their member instead of their type.
	focusgate.APIConverse: messagesKey,
}

// conversationKey returns the text that identifies the conversation a body
// belongs to, and false when the body says nothing that could: no
// instructions and no user turn (a lone tool output being sized, say).
//
// It reads only the members that name the conversation, which come early in
// a body, and does not check the rest: validating every byte first cost
// more than the rest of the gateway's work on a cache hit (0.2 ms for an
// 80k-token page, 0.7 ms for a tool loop of 18). A body that is not JSON
// past those members is given an arm all the same, and is refused by the
// upstream, which the step records, whichever the arm.
func conversationKey(api focusgate.API, body []byte) (string, bool) {
	keyer, ok := keyers[api]
	if !ok {
		return "", false
	}
	// The keyers read the body in place; what they return is copied into
	// the key below.
	instructions, firstUser := keyer(unsafe.String(unsafe.SliceData(body), len(body)))
	firstUser = goalOf(firstUser)
	if instructions == "" && firstUser == "" {
		return "", false
	}
	return api.String() + "\x00" + instructions + "\x00" + firstUser, true
}

// goalMarks start the goal section of the agents that send their whole
// prompt as one new user message each step (BrowserGym and AgentLab's
// "## Goal:", the BrowserGym demo agent's "# Goal", WebArena's and
// AgentOccam's "OBJECTIVE:"): the page and the history in that message
// change at every step, the goal does not.
var goalMarks = []string{"\n## Goal:", "\n# Goal", "OBJECTIVE:"}

// goalOf is the part of a first user turn that stays the same from step to
// step: the goal section when the turn has one (up to the next heading, or
// the end of an OBJECTIVE: line), else the whole turn.
func goalOf(s string) string {
	for _, mark := range goalMarks {
		// i is where the mark starts in "\n"+s, a text whose first line
		// counts as after a newline, found without copying s to make it.
		i := -1
		if first, ok := strings.CutPrefix(mark, "\n"); ok && strings.HasPrefix(s, first) {
			i = 0
		} else if j := strings.Index(s, mark); j >= 0 {
			i = j + 1
		}
		if i < 0 {
			continue
		}
		rest := s[i-1+len(mark):]
		if mark == "OBJECTIVE:" {
			rest, _, _ = strings.Cut(rest, "\n")
			return mark + rest
		}
		if j := strings.Index(rest, "\n#"); j >= 0 {
			rest = rest[:j]
		}
		return mark + rest
	}
	return s
}

// chatKey reads a chat-completions body: the system and developer messages
// before the first user message, and that message's text.
func chatKey(body string) (string, string) {
	var system []string
	first := ""
	gjson.Get(body, "messages").ForEach(func(_, m gjson.Result) bool {
		switch m.Get("role").String() {
		case "system", "developer":
			system = append(system, text(m.Get("content")))
			return true
		case "user":
			first = text(m.Get("content"))
			return false
		}
		return true
	})
	return strings.Join(system, "\n"), first
}

// responsesKey reads a Responses body. A request that names its
// conversation (the API's conversation object) is known by that id; others
// by their instructions, the system and developer items before the first
// user item, and that item's text. A request chained to an earlier one with
// previous_response_id carries only its new items: it is known by the first
// user item it carries, and by nothing when it carries none (see README,
// "Holdout").
func responsesKey(body string) (string, string) {
	conv := gjson.Get(body, "conversation")
	if id := conv.Get("id").String(); id != "" {
		return "conversation", id
	}
	if conv.Type == gjson.String && conv.String() != "" {
		return "conversation", conv.String()
	}
	system := []string{gjson.Get(body, "instructions").String()}
	input := gjson.Get(body, "input")
	if input.Type == gjson.String {
		return strings.Join(system, "\n"), input.String()
	}
	first := ""
	input.ForEach(func(_, item gjson.Result) bool {
		switch item.Get("role").String() {
		case "system", "developer":
			system = append(system, text(item.Get("content")))
		case "user":
			first = text(item.Get("content"))
			return false
		}
		return true
	})
	if first == "" && gjson.Get(body, "previous_response_id").String() != "" {
		// A chained step without its first turn: its instructions alone
		// would lump every conversation of the agent into one.
		return "", ""
	}
	return strings.Join(system, "\n"), first
}

// messagesKey reads an Anthropic Messages body, or a Bedrock Converse one:
// system (a string, or text blocks, Converse's without a type), and the
// text of the first user message (its text blocks: not its tool results,
// images or cache points).
func messagesKey(body string) (string, string) {
	first := ""
	gjson.Get(body, "messages").ForEach(func(_, m gjson.Result) bool {
		if m.Get("role").String() == "user" {
			first = text(m.Get("content"))
			return false
		}
		return true
	})
	return text(gjson.Get(body, "system")), first
}

// geminiKey reads a Gemini generateContent body: systemInstruction, and the
// text of the first user turn of contents (a turn without a role is the
// user's).
func geminiKey(body string) (string, string) {
	first := ""
	gjson.Get(body, "contents").ForEach(func(_, c gjson.Result) bool {
		if role := c.Get("role").String(); role == "" || role == "user" {
			first = text(c.Get("parts"))
			return false
		}
		return true
	})
	return text(gjson.Get(body, "systemInstruction.parts")), first
}

// text is the text of a content value as the APIs write it: a string, or a
// list of parts or blocks whose "text" members are joined. Other parts
// (images, tool calls, cache markers) are left out: agents move or change
// them from one request to the next.
func text(v gjson.Result) string {
	if v.Type == gjson.String {
		return v.String()
	}
	if !v.IsArray() {
		return ""
	}
	var parts []string
	v.ForEach(func(_, p gjson.Result) bool {
		if t := p.Get("text"); t.Type == gjson.String {
			parts = append(parts, t.String())
		}
		return true
	})
	return strings.Join(parts, "\n")
}
