package detect

import "github.com/focusgate/focusgate"

// The Gemini API (POST .../models/{model}:generateContent, Gemini CLI's API)
// puts the conversation in "contents": turns of role "user" or "model",
// each a list of parts. Pages arrive as the values of a functionResponse's
// "response" object (Gemini CLI: response.output, wrapped in
// <untrusted_context>), or in user text parts. functionCall parts are a
// model turn's calls; thought parts, thoughtSignature, inline data,
// systemInstruction, tools and generationConfig are never searched, and
// only the strings that hold a page change.
var geminiWalker = walker{
	api:   focusgate.APIGemini,
	model: "model",
	// A countTokens body may hold its conversation in the
	// generateContentRequest it sizes.
	turns: []string{"contents", "generateContentRequest.contents"},
	turn: turnShape{
		// A turn without a role is the user's, as the API reads it.
		role: "role", roles: geminiRole, unnamed: roleUser,
		content: "parts", holds: contentShape{parts: &geminiParts},
	},
}

// geminiParts are a turn's parts, known by the member they have.
var geminiParts = partShape{
	text:    "text",
	aside:   "thought",
	harness: geminiHarness,
	nested:  "functionResponse.response", result: true,
	call: callShape{at: "functionCall", name: "name", args: "args", raw: true},
}

func geminiRole(raw []byte) role {
	if string(raw) == "model" {
		return roleAssistant
	}
	return parseRole(raw)
}

// geminiHarness says whether a text part is Gemini CLI's own note to the
// model rather than the user's words: the <session_context> (date, system,
// folders) that comes before the task in the first turn, or a hook's
// <hook_context>.
func geminiHarness(raw []byte) bool {
	return wholeElement(raw, "session_context") || wholeElement(raw, "hook_context")
}
