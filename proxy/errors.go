package proxy

import (
	"encoding/json"
	"net/http"
)

// apiError is OpenAI's error body, so that SDKs raise focusgate's own errors
// (413, 502, 504) like any other API error.
type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

// writeError answers with one of focusgate's own errors, in the shape of
// the request's API: OpenAI's by default, Anthropic's on a request that
// speaks the Anthropic API (see speak), where typ and code give way to
// Anthropic's type for the status.
func writeError(w http.ResponseWriter, status int, message, typ, code string) {
	var body []byte
	if dialectOfWriter(w) == anthropic {
		body = anthropicErrorBody(status, message)
	} else {
		var e apiError
		e.Error.Message, e.Error.Type, e.Error.Code = message, typ, code
		body, _ = json.Marshal(e)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
