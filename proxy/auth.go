package proxy

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/focusgate/focusgate/internal/keys"
)

// Keys authenticates clients by their gateway key; *keys.File is the
// implementation. Lookup returns the key's name.
type Keys interface {
	Lookup(presented string) (name string, ok bool)
}

type keyNameCtx struct{}

// keyName is the name of the gateway key a request authenticated with, or
// keys.Anonymous.
func keyName(ctx context.Context) string {
	if name, ok := ctx.Value(keyNameCtx{}).(string); ok {
		return name
	}
	return keys.Anonymous
}

// authenticate guards every proxied route when gateway keys are configured:
// the client's Authorization must carry one of them, and is replaced by the
// upstream key before anything leaves the gateway. A request without a
// valid key is answered with 401 and nothing is sent upstream.
func (s *Server) authenticate(c *gin.Context) {
	if s.opts.Keys == nil {
		return
	}
	r := c.Request
	// Gateway keys come as a bearer token (OpenAI clients, Claude Code's
	// ANTHROPIC_AUTH_TOKEN) or in x-api-key (Anthropic clients,
	// ANTHROPIC_API_KEY).
	carrier, presented := "Authorization", bearerToken(r.Header)
	if presented == "" {
		carrier, presented = "X-Api-Key", singleValue(r.Header, "X-Api-Key")
	}
	name, ok := s.opts.Keys.Lookup(presented)
	if !ok {
		if r.ContentLength != 0 {
			// The body is not read: close rather than drain it.
			c.Header("Connection", "close")
		}
		c.Header("WWW-Authenticate", `Bearer realm="focusgate"`)
		writeError(c.Writer, http.StatusUnauthorized,
			"focusgate: missing or unknown gateway key; send one of the keys of FOCUSGATE_CLIENT_KEYS_FILE as your API key (Authorization: Bearer <key>)",
			"invalid_request_error", "invalid_api_key")
		c.Abort()
		return
	}
	// The gateway key never leaves the gateway; the upstream's own key, if
	// one is configured, takes its place in the header that upstream reads.
	// An upstream that needs no key (a local model server) gets none.
	r.Header.Del(carrier)
	s.stripGatewayKeys(r, presented, name)
	switch {
	case infoFrom(r.Context()).dialect == anthropic && s.opts.AnthropicAPIKey != "":
		r.Header.Set("X-Api-Key", s.opts.AnthropicAPIKey)
	case infoFrom(r.Context()).dialect != anthropic && s.opts.UpstreamAPIKey != "":
		r.Header.Set("Authorization", "Bearer "+s.opts.UpstreamAPIKey)
	}
	c.Request = r.WithContext(context.WithValue(r.Context(), keyNameCtx{}, name))
}

// bearerToken returns the credential of the request's single Authorization
// header with the Bearer scheme, or "".
func bearerToken(h http.Header) string {
	values := h.Values("Authorization")
	if len(values) != 1 {
		return ""
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(values[0]), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// singleValue returns the value of a header sent exactly once, or "".
func singleValue(h http.Header, name string) string {
	values := h.Values(name)
	if len(values) != 1 {
		return ""
	}
	return strings.TrimSpace(values[0])
}

// keyNamer is implemented by Keys that can list their names (*keys.File).
type keyNamer interface {
	Names() []string
}

// initKeys labels metrics with the names of the configured keys from the
// start; later changes come through KeysChanged.
func (s *Server) initKeys() {
	if n, ok := s.opts.Keys.(keyNamer); ok {
		s.KeysChanged(n.Names())
	}
}

// KeysChanged tells the gateway which key names are configured now, after
// a reload of the keys file. Metrics are labelled with these names only, so
// that their number of series stays bounded across reloads: the series of
// removed names are deleted, and a request still in flight under a removed
// name is counted as anonymous.
func (s *Server) KeysChanged(names []string) {
	s.metrics.setKeyNames(names)
}

// checkPath refuses a path that could leave the upstream's base path once
// some server along the way decodes and normalises it: a "." or ".."
// segment, also percent-encoded (%2e%2e, ..%2f, %252e) or with backslashes
// as separators. No OpenAI-compatible client sends one.
func (s *Server) checkPath(c *gin.Context) {
	if escapesBase(c.Request.URL) {
		writeError(c.Writer, http.StatusBadRequest,
			"focusgate: the request path contains a '.' or '..' segment", "invalid_request_error", "invalid_path")
		c.Abort()
	}
}

// maxUnescapes bounds how many layers of percent-encoding are undone when
// looking for dot segments.
const maxUnescapes = 3

func escapesBase(u *url.URL) bool {
	p := u.EscapedPath()
	for range maxUnescapes + 1 {
		if hasDotSegment(p) {
			return true
		}
		next, err := url.PathUnescape(p)
		if err != nil {
			// Not valid percent-encoding: the upstream cannot decode it
			// into a dot segment either.
			return false
		}
		if next == p {
			return false
		}
		p = next
	}
	// Still encoded after several layers: nobody sends that in good faith.
	return true
}

func hasDotSegment(p string) bool {
	for seg := range strings.FieldsFuncSeq(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// stripOwnTrailers removes focusgate's own headers from the trailers of an
// outgoing request, as they are removed from its headers: a client must not
// be able to pass X-Focusgate-* to the upstream by sending it after the body.
func stripOwnTrailers(out *http.Request) {
	for h := range out.Trailer {
		if strings.HasPrefix(http.CanonicalHeaderKey(h), headerPrefix) {
			delete(out.Trailer, h)
		}
	}
}
