package proxy

import (
	"net/http"
	"slices"
	"strings"

	"github.com/focusgate/focusgate/internal/keys"
)

// keyScanners is implemented by Keys that can find their keys inside text
// (*keys.File); other Keys are searched word by word with Lookup.
type keyScanners interface {
	Scanner(presented string) *keys.Scanner
}

var _ keyScanners = (*keys.File)(nil)

// stripGatewayKeys removes every other place a gateway key appears in the
// request, so that none reaches the upstream or the retriever however the
// client repeated it: in another header, as part of a longer value (a URL,
// "user:KEY", "KEY.x"), percent-encoded, or base64-encoded (a Basic
// credential, a token wrapping it). A header value that holds one is
// dropped, a cookie that holds one is cut from the Cookie header, a query
// parameter that holds one is cut from the query; everything else stays
// byte for byte. The names of what was removed are logged, never a value.
// presented is the key the request authenticated with, name its name.
func (s *Server) stripGatewayKeys(r *http.Request, presented, name string) {
	sc := s.scanner(presented)
	var removed []string
	for h, values := range r.Header {
		kept := values[:0:0]
		changed := false
		for _, v := range values {
			switch {
			case !sc.Holds(v):
				kept = append(kept, v)
			case h == "Cookie":
				if v = cutCookies(sc, v); v != "" {
					kept = append(kept, v)
				}
				changed = true
			default:
				changed = true
			}
		}
		switch {
		case !changed:
			continue
		case len(kept) == 0:
			delete(r.Header, h)
		default:
			r.Header[h] = kept
		}
		removed = append(removed, h)
	}
	if q := r.URL.RawQuery; q != "" && sc.Holds(q) {
		var kept []string
		for pair := range strings.SplitSeq(q, "&") {
			if !sc.Holds(pair) {
				kept = append(kept, pair)
			}
		}
		r.URL.RawQuery = strings.Join(kept, "&")
		removed = append(removed, "query")
	}
	if len(removed) > 0 {
		slices.Sort(removed)
		s.log.InfoContext(r.Context(), "gateway key removed from the request before forwarding", "from", removed, "key", name)
	}
}

// scanner finds every gateway key in a request's text: presented, the key it
// authenticated with, wherever it appears, any other as a word of its own.
func (s *Server) scanner(presented string) *keys.Scanner {
	if ks, ok := s.opts.Keys.(keyScanners); ok {
		return ks.Scanner(presented)
	}
	return keys.NewScanner([]string{presented}, s.opts.Keys.Lookup)
}

// cutCookies returns a Cookie header without the cookies that hold a gateway
// key.
func cutCookies(sc *keys.Scanner, header string) string {
	var kept []string
	for c := range strings.SplitSeq(header, ";") {
		if !sc.Holds(c) {
			kept = append(kept, strings.TrimSpace(c))
		}
	}
	return strings.Join(kept, "; ")
}
