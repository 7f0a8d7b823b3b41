package detect

import "github.com/focusgate/focusgate"

// OpenAI's chat completions put the conversation in "messages": each a
// role and its content, a string or a list of text parts, as AgentLab
// sends it. System, developer, user and tool messages are searched; an
// assistant's words and its tool_calls are history.
var chatWalker = walker{
	api:   focusgate.APIChat,
	model: "model",
	turns: []string{"messages"},
	turn: turnShape{
		role: "role", roles: parseRole,
		content: "content", holds: textContent,
		calls: "tool_calls", call: callShape{at: "function", name: "name", args: "arguments"},
	},
}

// OpenAI's Responses API puts the conversation in "input", a string (the
// user's words) or a list of items, and the agent's instructions in
// "instructions". A message item holds its text in "content", a
// function_call_output item (where Playwright MCP's snapshots come back)
// in "output"; a function_call item is an assistant's call.
var responsesWalker = walker{
	api:         focusgate.APIResponses,
	model:       "model",
	prompt:      "instructions",
	promptHolds: contentShape{text: true},
	turns:       []string{"input"},
	lone:        roleUser,
	turn: turnShape{
		role: "role", roles: parseRole,
		holds: textContent,
		call:  callShape{name: "name", args: "arguments"},
		kind:  "type",
		kinds: []turnKind{
			{name: "", content: "content"},
			{name: "message", content: "content"},
			{name: "function_call_output", role: roleTool, content: "output"},
			{name: "function_call", role: roleAssistant, call: true},
		},
	},
}

// textContent is the content of the OpenAI APIs, and of a Messages API
// system prompt and tool result: a string, or a list of text parts
// ({"type":"text","text":"..."}; input_text and output_text in Responses,
// a part without a type too).
var textContent = contentShape{text: true, parts: &textParts}

var textParts = partShape{
	typ:   "type",
	types: map[string]partKind{"": partText, "text": partText, "input_text": partText, "output_text": partText},
	text:  "text",
}
