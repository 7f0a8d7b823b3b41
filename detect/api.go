package detect

import (
	"github.com/tidwall/gjson"

	"github.com/focusgate/focusgate"
)

// APIOf tells from a request body's shape which API it was written for, for
// a caller that has a body but no route (`focusgate prune --request`). A
// Gemini body has "contents" (or, to countTokens, "generateContentRequest")
// and no "messages". A Responses body has "input" or "instructions" and no "messages"; a Messages
// body is told from a chat body by what only Anthropic's API has: a
// top-level "system", or content blocks of type tool_use, tool_result,
// thinking or redacted_thinking. Anything else, a body that is valid in both
// (user and assistant strings only) included, is chat.
func APIOf(body []byte) focusgate.API {
	top := gjson.GetManyBytes(body, "messages", "input", "instructions", "system", "contents", "generateContentRequest")
	messages, input, instructions, system := top[0], top[1], top[2], top[3]
	switch {
	case !messages.Exists() && (top[4].Exists() || top[5].Exists()):
		return focusgate.APIGemini
	case !messages.Exists() && (input.Exists() || instructions.Exists()):
		return focusgate.APIResponses
	case system.Exists():
		return focusgate.APIMessages
	}
	anthropic := false
	messages.ForEach(func(_, m gjson.Result) bool {
		m.Get("content").ForEach(func(_, block gjson.Result) bool {
			switch block.Get("type").String() {
			case "tool_use", "tool_result", "thinking", "redacted_thinking":
				anthropic = true
			}
			return !anthropic
		})
		return !anthropic
	})
	if anthropic {
		return focusgate.APIMessages
	}
	return focusgate.APIChat
}
