package proxy

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"
)

// dialect says which provider's API a request speaks: it picks the upstream
// a request goes to, the header that carries the upstream key, and the shape
// of focusgate's own error answers.
type dialect uint8

const (
	openAI    dialect = iota // OpenAI and OpenAI-compatible APIs: FOCUSGATE_UPSTREAM_URL
	anthropic                // the Anthropic API: FOCUSGATE_ANTHROPIC_URL
)

// dialectOf tells a request's API: the Messages routes are Anthropic's, and
// so is any other request that names an Anthropic API version, as every
// Anthropic client does (Claude Code's other calls pass through to the
// Anthropic upstream that way).
func dialectOf(r *http.Request, messagesRoute bool) dialect {
	if messagesRoute || r.Header.Get("Anthropic-Version") != "" {
		return anthropic
	}
	return openAI
}

// speakDialect marks a proxied request with the dialect it speaks.
func (s *Server) speakDialect(c *gin.Context) {
	d := dialectOf(c.Request, routeLabel(c.FullPath()) == "messages")
	infoFrom(c.Request.Context()).dialect = d
	speak(c, d)
}

// shapedWriter carries a request's dialect to the code that writes
// focusgate's own errors, which only has the ResponseWriter in hand.
type shapedWriter struct {
	gin.ResponseWriter
	dialect dialect
}

// Unwrap lets http.ResponseController reach the connection.
func (w *shapedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// speak marks the request's writer with its dialect, for the rest of the
// handler chain and the reverse proxy's error handler.
func speak(c *gin.Context, d dialect) {
	if d != openAI {
		c.Writer = &shapedWriter{ResponseWriter: c.Writer, dialect: d}
	}
}

func dialectOfWriter(w http.ResponseWriter) dialect {
	if sw, ok := w.(*shapedWriter); ok {
		return sw.dialect
	}
	return openAI
}

// anthropicError is Anthropic's error body, so that Claude Code and the
// Anthropic SDKs raise focusgate's own errors like any other API error.
type anthropicError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// anthropicErrorType is the type Anthropic's API gives an error of status.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func anthropicErrorBody(status int, message string) []byte {
	var e anthropicError
	e.Type = "error"
	e.Error.Type, e.Error.Message = anthropicErrorType(status), message
	body, _ := json.Marshal(e)
	return body
}

// upstreamFor is the base URL a request of dialect d goes to.
func (s *Server) upstreamFor(d dialect) *url.URL {
	if d == anthropic {
		return s.opts.AnthropicUpstream
	}
	return s.opts.Upstream
}
