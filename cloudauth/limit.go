package cloudauth

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
)

// ErrTooLarge says that a credential endpoint's answer, or a credentials
// file, is larger than any real one: it is not read further.
var ErrTooLarge = errors.New("cloudauth: larger than a credential can be")

// cappedBody reads at most left bytes of rc and fails past them, rather
// than truncating silently: a cut token answer must not parse as a short
// one.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func capBody(rc io.ReadCloser, limit int64) io.ReadCloser {
	return &cappedBody{rc: rc, left: limit}
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, ErrTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n + int(b.left), ErrTooLarge
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// cappedTransport caps what is read of every answer.
type cappedTransport struct {
	base  http.RoundTripper
	limit int64
}

func (t cappedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err == nil && resp.Body != nil {
		resp.Body = capBody(resp.Body, t.limit)
	}
	return resp, err
}

// tokenClient is c, or a new client, with a timeout on every call and a cap
// on every answer.
func tokenClient(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	}
	if out.Timeout <= 0 {
		out.Timeout = fetchTimeout
	}
	base := out.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out.Transport = cappedTransport{base: base, limit: maxResponse}
	return &out
}

// readFile reads a small file whole, refusing one over limit bytes.
func readFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w (over %d bytes)", path, ErrTooLarge, limit)
	}
	return data, nil
}
