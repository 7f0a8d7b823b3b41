package detect

import (
	"github.com/tidwall/gjson"

	"github.com/focusgate/focusgate"
)

// APIOf tells from a request body's shape which API it was written for, for
// a caller that has a body but no route (`focusgate prune --request`). A
// Gemini body has "contents" (or, to countTokens, "generateContentRequest")
// and no "messages". A Responses body has "input" or "instructions" and no
// "messages". A Converse body has what only Bedrock's API has: a top-level
// "inferenceConfig", "toolConfig" or "additionalModelRequestFields", or
// blocks without a "type" (told apart by their one member's name) in its
// "system" or its messages' content. A Messages body is told from a chat
// body by what only Anthropic's API has: a top-level "system", or content
// blocks of type tool_use, tool_result, thinking or redacted_thinking.
// Anything else, a body that is valid in both (user and assistant strings
// only) included, is chat.
func APIOf(body []byte) focusgate.API {
	top := gjson.GetManyBytes(body, "messages", "input", "instructions", "system", "contents", "generateContentRequest",
		"inferenceConfig", "toolConfig", "additionalModelRequestFields")
	messages, input, instructions, system := top[0], top[1], top[2], top[3]
	switch {
	case !messages.Exists() && (top[4].Exists() || top[5].Exists()):
		return focusgate.APIGemini
	case !messages.Exists() && (input.Exists() || instructions.Exists()):
		return focusgate.APIResponses
	case top[6].Exists() || top[7].Exists() || top[8].Exists() || converseBlocksIn(system):
		return focusgate.APIConverse
	}
	var anthropic, converse bool
	messages.ForEach(func(_, m gjson.Result) bool {
		m.Get("content").ForEach(func(_, block gjson.Result) bool {
			switch block.Get("type").String() {
			case "tool_use", "tool_result", "thinking", "redacted_thinking":
				anthropic = true
			case "":
				converse = converseBlock(block)
			}
			return !anthropic && !converse
		})
		return !anthropic && !converse
	})
	switch {
	case converse:
		return focusgate.APIConverse
	case anthropic, system.Exists():
		return focusgate.APIMessages
	}
	return focusgate.APIChat
}

// converseBlocksIn says whether a list holds a Converse content block.
func converseBlocksIn(list gjson.Result) bool {
	found := false
	if list.IsArray() {
		list.ForEach(func(_, block gjson.Result) bool {
			found = converseBlock(block)
			return !found
		})
	}
	return found
}

// converseMembers are the members that name a Converse content block, in
// a message or in the system prompt.
var converseMembers = []string{"text", "toolUse", "toolResult", "reasoningContent", "image", "document", "video", "cachePoint", "guardContent", "citationsContent"}

// converseBlock says whether a block is a Converse content block: an
// object without a "type" whose member names its kind.
func converseBlock(block gjson.Result) bool {
	if !block.IsObject() || block.Get("type").Exists() {
		return false
	}
	found := false
	block.ForEach(func(key, _ gjson.Result) bool {
		for _, m := range converseMembers {
			if key.String() == m {
				found = true
			}
		}
		return !found
	})
	return found
}
