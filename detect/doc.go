// Package detect finds the web-page observations inside the prompts that web agents
// send to the APIs focusgate serves (OpenAI chat completions and Responses,
// Anthropic Messages, Gemini generateContent, Bedrock Converse; one walker
// each, a description of the API's body read by one skeleton in walk.go,
// registered in conversation.go):
// accessibility trees and similar page snapshots
// written by BrowserGym/AgentLab, WebArena, AgentOccam, OpenHands, Playwright MCP,
// browser-use, Stagehand and chrome-devtools-mcp, together with the goal and the
// interaction history that belong to each of them. Each page format is one unit (see
// registry in format.go): its grammar, id cue, prompt labels, stub and marker syntax
// and fixture.
//
// Everything that focusgate may prune is decided here, so the package leans towards
// precision: a block counts only when at least MinLines consecutive lines parse under
// one tree grammar and at least MinIDLines of them carry an element id. Missing a tree
// costs the user money; pruning prose would corrupt the prompt.
//
// A page often reaches the model wrapped by its client: read back from a file
// with line numbers, passed through JSON.stringify, cut in the middle around a
// marker, with the harness's notes around it. Detection peels such wrappers as
// composable layers (see layers.go), in any order, and reports every tree so
// that it can be written back through them exactly.
//
// Detection is a function of the request bytes. The package never rewrites a body,
// never re-serialises JSON, never normalises whitespace and never calls a network
// service. Find keeps no state; a Finder remembers, in bounded memory, the pages it
// has parsed, so that a conversation's older pages are not parsed again at every
// step, and returns what Find would. It reports, for every tree, the exact
// byte span of the escaped text inside the original JSON string literal, so that the
// caller can splice a replacement into the untouched body. The returned strings never
// alias the body.
package detect
