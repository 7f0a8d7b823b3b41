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
// Each returns the instructions and the goal of the first user turn (see
// goalOf), reading the body in place.
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
		i := markAt(s, mark)
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

// markAt is where mark starts in "\n"+s, a text whose first line counts as
// after a newline, found without copying s to make it; -1 when it does not.
func markAt(s, mark string) int {
	if first, ok := strings.CutPrefix(mark, "\n"); ok && strings.HasPrefix(s, first) {
		return 0
	}
	if j := strings.Index(s, mark); j >= 0 {
		return j + 1
	}
	return -1
}

// chatKey reads a chat-completions body: the system and developer messages
// before the first user message, and that message's goal.
func chatKey(body string) (string, string) {
	var system []string
	first := ""
	elements(body, member(body, 0, "messages"), func(m string) bool {
		switch gjson.Get(m, "role").String() {
		case "system", "developer":
			system = append(system, text(gjson.Get(m, "content")))
			return true
		case "user":
			first = goalText(value(m, member(m, 0, "content")))
			return false
		}
		return true
	})
	return strings.Join(system, "\n"), first
}

// responsesKey reads a Responses body. A request that names its
// conversation (the API's conversation object) is known by that id; others
// by their instructions, the system and developer items before the first
// user item, and that item's goal. A request chained to an earlier one with
// previous_response_id carries only its new items: it is known by the first
// user item it carries, and by nothing when it carries none (see README,
// "Holdout").
func responsesKey(body string) (string, string) {
	at := members(body, 0, "conversation", "instructions", "input", "previous_response_id")
	conv := gjson.Parse(value(body, at[0]))
	if id := conv.Get("id").String(); id != "" {
		return "conversation", id
	}
	if conv.Type == gjson.String && conv.String() != "" {
		return "conversation", conv.String()
	}
	system := []string{gjson.Parse(value(body, at[1])).String()}
	if input := value(body, at[2]); strings.HasPrefix(input, `"`) {
		return strings.Join(system, "\n"), goalOf(gjson.Parse(input).String())
	}
	first := ""
	elements(body, at[2], func(item string) bool {
		switch gjson.Get(item, "role").String() {
		case "system", "developer":
			system = append(system, text(gjson.Get(item, "content")))
		case "user":
			first = goalText(value(item, member(item, 0, "content")))
			return false
		}
		return true
	})
	if first == "" && gjson.Parse(value(body, at[3])).String() != "" {
		// A chained step without its first turn: its instructions alone
		// would lump every conversation of the agent into one.
		return "", ""
	}
	return strings.Join(system, "\n"), first
}

// messagesKey reads an Anthropic Messages body, or a Bedrock Converse one:
// system (a string, or text blocks, Converse's without a type), and the
// goal of the first user message (its text blocks: not its tool results,
// images or cache points).
func messagesKey(body string) (string, string) {
	at := members(body, 0, "messages", "system")
	first := ""
	elements(body, at[0], func(m string) bool {
		if gjson.Get(m, "role").String() == "user" {
			first = goalText(value(m, member(m, 0, "content")))
			return false
		}
		return true
	})
	return text(gjson.Parse(value(body, at[1]))), first
}

// geminiKey reads a Gemini generateContent body: systemInstruction, and the
// goal of the first user turn of contents (a turn without a role is the
// user's).
func geminiKey(body string) (string, string) {
	at := members(body, 0, "contents", "systemInstruction")
	first := ""
	elements(body, at[0], func(c string) bool {
		if role := gjson.Get(c, "role").String(); role == "" || role == "user" {
			first = goalText(value(c, member(c, 0, "parts")))
			return false
		}
		return true
	})
	return text(gjson.Get(value(body, at[1]), "parts")), first
}

// goalText is goalOf the text of content, a first user turn's content in
// raw JSON (see text). A list of parts is read one part at a time, and once
// the goal section is known, the parts after it are not decoded: in
// AgentLab's prompt they are the page and the history.
func goalText(content string) string {
	if !strings.HasPrefix(content, "[") {
		return goalOf(text(gjson.Parse(content)))
	}
	var b strings.Builder
	parts, goal, known := 0, "", false
	elements(content, 0, func(p string) bool {
		v := member(p, 0, "text")
		if v < 0 || p[v] != '"' {
			return true
		}
		if parts > 0 {
			if goal, known = goalEnds(b.String(), p[v:]); known {
				return false
			}
			b.WriteByte('\n')
		}
		b.WriteString(gjson.Parse(p[v:]).String())
		parts++
		return true
	})
	if known {
		return goal
	}
	return goalOf(b.String())
}

// goalEnds says whether the goal section of the text acc + "\n" + next is
// known before next, a part's text as a raw JSON string, is decoded: the
// first goal mark goalOf looks for is in acc, and its section ends there or
// where next starts, with a heading.
func goalEnds(acc, next string) (string, bool) {
	mark := goalMarks[0]
	i := markAt(acc, mark)
	if i < 0 {
		return "", false
	}
	switch rest := acc[i-1+len(mark):]; {
	case strings.Contains(rest, "\n#"):
		return goalOf(acc), true
	case strings.HasPrefix(next, `"#`):
		return goalOf(acc + "\n#"), true
	case strings.HasPrefix(next, `"\n#`):
		return goalOf(acc + "\n\n#"), true
	}
	return "", false
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
