package cloudtest

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Redacted returns h with the values of credentials replaced by
// placeholders that keep their shape: a SigV4 Authorization keeps its
// scope and signed headers and loses its key id and signature, a bearer
// token keeps its scheme.
func Redacted(h http.Header) http.Header {
	out := h.Clone()
	for k, vs := range out {
		for i, v := range vs {
			switch strings.ToLower(k) {
			case "authorization":
				switch {
				case strings.HasPrefix(v, "AWS4-HMAC-SHA256 "):
					v = sigV4Key.ReplaceAllString(v, "Credential=<access-key-id>/")
					v = sigV4Sig.ReplaceAllString(v, "Signature=<signature>")
				case strings.Contains(v, " "):
					v = v[:strings.Index(v, " ")] + " <token>"
				default:
					v = "<token>"
				}
			case "api-key", "x-api-key", "x-goog-api-key":
				v = "<api-key>"
			case "x-amz-security-token":
				v = "<session-token>"
			}
			vs[i] = v
		}
	}
	return out
}

var (
	sigV4Key   = regexp.MustCompile(`Credential=[^/]+/`)
	sigV4Sig   = regexp.MustCompile(`Signature=[0-9a-f]+`)
	assertion  = regexp.MustCompile(`assertion=[^&]+`)
	fileUnsafe = regexp.MustCompile(`[^A-Za-z0-9.-]+`)
)

// HTTP is the request as it went over the wire, for reading: the request
// line with the path and query as sent, the headers sorted, credentials
// redacted, and the body byte for byte (a token request's assertion
// redacted).
func (r Request) HTTP() []byte {
	var b bytes.Buffer
	target := r.Path
	if r.RawQuery != "" {
		target += "?" + r.RawQuery
	}
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", r.Method, target)
	h := Redacted(r.Header)
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		for _, v := range h[k] {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	if r.Route == "token" {
		b.Write(assertion.ReplaceAll(r.Body, []byte("assertion=<jwt>")))
	} else {
		b.Write(r.Body)
	}
	return b.Bytes()
}

// WriteCaptures writes each request into dir as NN-<route>.http (see
// HTTP), numbered in arrival order, for testdata and for reading what a
// client sent.
func WriteCaptures(dir string, reqs []Request) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, r := range reqs {
		route := r.Route
		if route == "" {
			route = "unrouted"
		}
		route = strings.Trim(fileUnsafe.ReplaceAllString(strings.NewReplacer("{", "", "}", "").Replace(route), "-"), "-")
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d-%s.http", i+1, route)), r.HTTP(), 0o644); err != nil {
			return err
		}
	}
	return nil
}
