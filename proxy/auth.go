package proxy

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/focusgate/focusgate"
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
// the client must present one of them in one of the places its API's
// clients put a key (or another provider's), and none of them leaves the
// gateway: authorize puts the gateway's own credential in their place. A
// request without a valid key is answered with 401 in its API's error shape
// and nothing is sent upstream.
func (s *Server) authenticate(c *gin.Context) {
	if s.opts.Keys == nil {
		return
	}
	r := c.Request
	carrier, presented := presentedKey(r, providerOf(r))
	if s.scanner(presented).Holds(r.URL.EscapedPath()) {
		// A key in the path (a segment, ";key=", a "#fragment" net/http
		// keeps) would go upstream, into the model a route names, the
		// access log and the traces: such a request goes nowhere.
		infoFrom(r.Context()).keyInPath = true
		if r.ContentLength != 0 {
			c.Header("Connection", "close")
		}
		writeError(c.Writer, http.StatusBadRequest,
			"focusgate: the request path holds a gateway key; send it as your API key, in a header, and never in the URL",
			"invalid_request_error", "key_in_path")
		c.Abort()
		return
	}
	name, ok := s.opts.Keys.Lookup(presented)
	if !ok {
		if r.ContentLength != 0 {
			// The body is not read: close rather than drain it.
			c.Header("Connection", "close")
		}
		c.Header("WWW-Authenticate", `Bearer realm="focusgate"`)
		writeError(c.Writer, http.StatusUnauthorized,
			"focusgate: missing or unknown gateway key; send one of the keys of FOCUSGATE_CLIENT_KEYS_FILE as your API key",
			"invalid_request_error", "invalid_api_key")
		c.Abort()
		return
	}
	// The gateway key never leaves the gateway: it is taken out of where it
	// came and of every other header that repeats it; authorize puts
	// the upstream's own key in its place.
	carrier.Remove(r)
	s.stripGatewayKeys(r, presented, name)
	c.Request = r.WithContext(context.WithValue(r.Context(), keyNameCtx{}, name))
}

// presentedKey is the key a client presents and where: the first place,
// of those its provider's clients use and then those of the other
// providers, that holds one.
func presentedKey(r *http.Request, own *focusgate.Provider) (focusgate.Credential, string) {
	for _, p := range append([]*focusgate.Provider{own}, focusgate.Providers...) {
		for _, c := range p.Credentials {
			if v := c.In(r); v != "" {
				return c, v
			}
		}
	}
	return focusgate.Credential{Kind: focusgate.CredentialBearer, Name: "Authorization"}, ""
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
