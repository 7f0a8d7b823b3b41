package focusgate

import (
	"fmt"
	"strings"
)

// API is the shape of a request body: how it is read and written. Each API
// is read by one walker in detect, metered by one usage reader, keyed for
// the holdout by one keyer in holdout, and asked by one retriever client in
// prune, each registered there by the API's constant. An API says nothing
// of where a request goes: providers do (provider.go), and one API may be
// served by several (Messages by Anthropic, AWS Bedrock and Google Vertex
// AI).
type API uint8

const (
	APIChat      API = iota // OpenAI chat completions
	APIResponses            // OpenAI Responses
	APIMessages             // Anthropic Messages
	APIGemini               // Google's generateContent
	APIConverse             // AWS Bedrock's Converse
)

// APIs lists every API, in the order of their constants.
var APIs = []API{APIChat, APIResponses, APIMessages, APIGemini, APIConverse}

var apiNames = [...]string{APIChat: "chat", APIResponses: "responses", APIMessages: "messages", APIGemini: "gemini", APIConverse: "converse"}

// String is the API's name in routes, metrics, logs and the dashboard.
func (a API) String() string {
	if int(a) < len(apiNames) {
		return apiNames[a]
	}
	return fmt.Sprintf("API(%d)", a)
}

// ParseAPI reads an API name ("chat", "responses", "messages", "gemini",
// "converse"), ignoring case.
func ParseAPI(s string) (API, error) {
	for _, a := range APIs {
		if strings.EqualFold(strings.TrimSpace(s), a.String()) {
			return a, nil
		}
	}
	return 0, fmt.Errorf("unknown API %q (want %s)", s, strings.Join(apiNames[:], ", "))
}
