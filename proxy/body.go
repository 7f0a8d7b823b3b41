package proxy

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
)

var (
	// errBodyTooLarge means the body, decoded, is larger than MaxBodyBytes.
	errBodyTooLarge = errors.New("request body is larger than the gateway accepts (FOCUSGATE_MAX_BODY_BYTES)")
	// errUndecodable means the body's Content-Encoding is unknown or its
	// bytes do not decode; such a body is forwarded as it came.
	errUndecodable = errors.New("request body cannot be decoded")
)

// readAll reads r whole, failing with errBodyTooLarge past limit bytes rather
// than holding an unbounded body in memory.
func readAll(r io.Reader, limit, sizeHint int64) ([]byte, error) {
	var buf bytes.Buffer
	if sizeHint > 0 && sizeHint <= limit {
		buf.Grow(int(sizeHint) + bytes.MinRead)
	}
	n, err := buf.ReadFrom(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, errBodyTooLarge
	}
	return buf.Bytes(), nil
}

// decode undoes the codings of a Content-Encoding header (listed in the
// order they were applied), capping the decoded size at limit so that a small
// compressed bomb cannot exhaust memory.
func decode(body []byte, contentEncoding string, limit int64) ([]byte, error) {
	codings := strings.Split(contentEncoding, ",")
	for i := len(codings) - 1; i >= 0; i-- {
		coding := strings.ToLower(strings.TrimSpace(codings[i]))
		var err error
		switch coding {
		case "", "identity":
			continue
		case "gzip", "x-gzip":
			body, err = decodeWith(body, limit, func(r io.Reader) (io.ReadCloser, error) { return gzip.NewReader(r) })
		case "deflate":
			// HTTP's deflate is zlib-wrapped, but some clients send raw
			// deflate; accept both.
			decoded, zerr := decodeWith(body, limit, zlib.NewReader)
			if errors.Is(zerr, errUndecodable) {
				decoded, zerr = decodeWith(body, limit, func(r io.Reader) (io.ReadCloser, error) { return flate.NewReader(r), nil })
			}
			body, err = decoded, zerr
		case "zstd":
			body, err = decodeWith(body, limit, func(r io.Reader) (io.ReadCloser, error) {
				d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)+1))
				if err != nil {
					return nil, err
				}
				return d.IOReadCloser(), nil
			})
		default:
			return nil, fmt.Errorf("%w: unsupported Content-Encoding %q", errUndecodable, coding)
		}
		if err != nil {
			return nil, err
		}
	}
	return body, nil
}

func decodeWith(body []byte, limit int64, open func(io.Reader) (io.ReadCloser, error)) ([]byte, error) {
	rc, err := open(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUndecodable, err)
	}
	defer rc.Close()
	out, err := readAll(rc, limit, int64(len(body))*4)
	if err != nil && !errors.Is(err, errBodyTooLarge) {
		return nil, fmt.Errorf("%w: %w", errUndecodable, err)
	}
	return out, err
}

// setBody makes b the request's body, keeping ContentLength, the
// Content-Length header and GetBody (used for retries and redirects) in step.
func setBody(r *http.Request, b []byte) {
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	r.Header.Set("Content-Length", strconv.Itoa(len(b)))
	r.TransferEncoding = nil
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
}
