package detect

import (
	"bytes"

	"github.com/focusgate/focusgate"
)

// The Anthropic Messages API (POST /v1/messages, Claude Code's only API)
// puts text in "system" (a string or text blocks) and in each message's
// "content" (a string or blocks). Pages arrive in tool_result blocks, whose
// content is a string or text blocks, and those sit in user messages: a
// user message made of tool results is tool output, not the user's words.
// thinking and redacted_thinking blocks (signed), tool_use, images,
// documents and unknown blocks are never searched, and cache_control
// markers are never touched: only the strings that hold a page change.
var messagesWalker = walker{
	api:         focusgate.APIMessages,
	model:       "model",
	prompt:      "system",
	promptHolds: textContent,
	turns:       []string{"messages"},
	turn: turnShape{
		role: "role", roles: parseRole,
		content: "content", holds: contentShape{text: true, parts: &messagesBlocks},
	},
}

// messagesBlocks are a message's content blocks, known by their type.
var messagesBlocks = partShape{
	typ:     "type",
	types:   map[string]partKind{"text": partText, "tool_result": partNested, "tool_use": partCall},
	text:    "text",
	harness: harnessText,
	nested:  "content", holds: &textContent, result: true,
	call: callShape{name: "name", args: "input", raw: true},
}

// harnessText says whether a text block is Claude Code's own note to the
// model rather than the user's words: a block that is one
// <system-reminder>...</system-reminder> (context, reminders, file state).
// Claude Code puts several before the task in the first message, enough to
// push the task out of a goal's first kilobytes.
func harnessText(raw []byte) bool {
	return wholeElement(raw, "system-reminder")
}

// wholeElement says whether an escaped JSON string's text is one
// <tag>...</tag> element, surrounding blanks aside.
func wholeElement(raw []byte, tag string) bool {
	open, end := []byte("<"+tag+">"), []byte("</"+tag+">")
	raw = bytes.TrimLeft(raw, " \t")
	for bytes.HasPrefix(raw, []byte(`\n`)) {
		raw = bytes.TrimLeft(raw[2:], " \t")
	}
	raw = bytes.TrimRight(raw, " \t")
	for bytes.HasSuffix(raw, []byte(`\n`)) {
		raw = bytes.TrimRight(raw[:len(raw)-2], " \t")
	}
	return bytes.HasPrefix(raw, open) && bytes.HasSuffix(raw, end) && bytes.Count(raw, open) == bytes.Count(raw, end)
}
