package detect

import "github.com/focusgate/focusgate"

// AWS Bedrock's Converse API (POST /model/{model}/converse and
// /converse-stream: the AWS SDKs, the AI SDK's Bedrock provider) puts the
// conversation in "messages": turns of role "user" or "assistant", each a
// list of content blocks told apart by their one member's name, not by a
// type. Pages arrive in toolResult blocks, whose content is a list of
// blocks: the AI SDK sends a tool's output as {"text": ...}, a JSON output
// stringified into that text (read through the JSON layer); a client that
// builds its body with the AWS SDKs may send a JSON output as {"json": ...},
// whose strings are read like Gemini's function responses. A user's text
// blocks are searched too. toolUse blocks are an assistant's calls;
// reasoningContent (signed), images, documents, videos, cachePoint and
// guardContent blocks, toolConfig, inferenceConfig and
// additionalModelRequestFields are never searched. "system" is a list of
// blocks whose text is the agent's instructions, read for the goal only.
// The model is named by the path, not the body.
var converseWalker = walker{
	api:         focusgate.APIConverse,
	prompt:      "system",
	promptHolds: contentShape{parts: &converseText},
	quietPrompt: true,
	turns:       []string{"messages"},
	turn: turnShape{
		role: "role", roles: parseRole,
		content: "content", holds: contentShape{parts: &converseBlocks},
	},
}

// converseBlocks are a message's content blocks.
var converseBlocks = partShape{
	text:   "text",
	nested: "toolResult.content", holds: &contentShape{parts: &converseResults}, result: true,
	call: callShape{at: "toolUse", name: "name", args: "input", raw: true},
}

// converseResults are the blocks of a tool result's content.
var converseResults = partShape{text: "text", nested: "json"}

// converseText are the blocks of the system prompt: only text blocks hold
// text.
var converseText = partShape{text: "text"}
