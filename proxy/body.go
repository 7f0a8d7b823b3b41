package proxy

import (
	"bufio"
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

	"github.com/focusgate/focusgate/internal/budget"
)

var (
	// errBodyTooLarge means the body, decoded, is larger than MaxBodyBytes.
	errBodyTooLarge = errors.New("request body is larger than the gateway accepts (FOCUSGATE_MAX_BODY_BYTES)")
	// errUndecodable means the body's Content-Encoding is unknown or its
	// bytes do not decode; such a body is forwarded as it came.
	errUndecodable = errors.New("request body cannot be decoded")
)

// readAll reads r whole, failing with errBodyTooLarge past limit bytes rather
// than holding an unbounded body in memory. A body whose size is known
// (sizeHint, its Content-Length) is read into a pooled buffer without a
// copy; the caller releases it.
func readAll(r io.Reader, limit, sizeHint int64) (*heldBody, error) {
	if sizeHint <= 0 || sizeHint > limit {
		b, err := readRest(nil, r, limit)
		if err != nil {
			return nil, err
		}
		return holding(b), nil
	}
	h := newHeldBody(sizeHint)
	n := 0
	for n < len(h.b) {
		m, err := r.Read(h.b[n:])
		n += m
		if errors.Is(err, io.EOF) {
			h.b = h.b[:n]
			return h, nil
		}
		if err != nil {
			h.Release()
			return nil, err
		}
	}
	// A reader that says less than it holds is read on past its word.
	var one [1]byte
	m, err := io.ReadFull(r, one[:])
	switch {
	case m == 0 && errors.Is(err, io.EOF):
		return h, nil
	case m == 0:
		h.Release()
		return nil, err
	}
	b, err := readRest(append(append(make([]byte, 0, n+bytes.MinRead), h.b...), one[0]), r, limit)
	h.Release()
	if err != nil {
		return nil, err
	}
	return holding(b), nil
}

// readRest appends the rest of r to b, up to limit bytes in all.
func readRest(b []byte, r io.Reader, limit int64) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	if _, err := buf.ReadFrom(io.LimitReader(r, limit+1-int64(len(b)))); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > limit {
		return nil, errBodyTooLarge
	}
	return buf.Bytes(), nil
}

// errBusy means a compressed body fits under the cap but the memory budget
// had no room for its decoded bytes: it is forwarded as it came, uninspected.
var errBusy = errors.New("request body decoded within the cap, but not held: the memory budget is full")

// decoder chains the decoders of a Content-Encoding header (listed in the
// order the codings were applied) over r, so that the body is decoded as a
// stream: no layer is ever held whole. closeAll releases them.
func decoder(r io.Reader, contentEncoding string, limit int64) (io.Reader, func(), error) {
	var closers []io.Closer
	closeAll := func() {
		for _, c := range closers {
			c.Close()
		}
	}
	codings := strings.Split(contentEncoding, ",")
	for i := len(codings) - 1; i >= 0; i-- {
		switch coding := strings.ToLower(strings.TrimSpace(codings[i])); coding {
		case "", "identity":
		case "gzip", "x-gzip":
			zr, err := gzip.NewReader(r)
			if err != nil {
				closeAll()
				return nil, nil, fmt.Errorf("%w: %w", errUndecodable, err)
			}
			closers, r = append(closers, zr), zr
		case "deflate":
			// HTTP's deflate is zlib-wrapped, but some clients send raw
			// deflate: a zlib header says which.
			br := bufio.NewReader(r)
			if h, err := br.Peek(2); err == nil && h[0]&0x0f == 8 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0 {
				zr, err := zlib.NewReader(br)
				if err != nil {
					closeAll()
					return nil, nil, fmt.Errorf("%w: %w", errUndecodable, err)
				}
				closers, r = append(closers, zr), zr
			} else {
				fr := flate.NewReader(br)
				closers, r = append(closers, fr), fr
			}
		case "zstd":
			// A frame may ask for a window of up to 3.75 TB; one larger than
			// the cap could not decode within it anyway.
			zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderMaxMemory(uint64(limit)+1), zstd.WithDecoderMaxWindow(uint64(max(limit, zstd.MinWindowSize))))
			if err != nil {
				closeAll()
				return nil, nil, fmt.Errorf("%w: %w", errUndecodable, err)
			}
			rc := zr.IOReadCloser()
			closers, r = append(closers, rc), rc
		default:
			closeAll()
			return nil, nil, fmt.Errorf("%w: unsupported Content-Encoding %q", errUndecodable, coding)
		}
	}
	return r, closeAll, nil
}

// checkDecodedSize decodes body only to count its bytes, in constant memory
// (a zstd window aside, itself bounded by limit): errBodyTooLarge past limit,
// errUndecodable when it does not decode. The passthrough routes forward a
// compressed body as it came, but the cap on its decoded size holds there
// too.
func checkDecodedSize(body []byte, contentEncoding string, limit int64) error {
	r, closeAll, err := decoder(bytes.NewReader(body), contentEncoding, limit)
	if err != nil {
		return err
	}
	defer closeAll()
	n, err := io.Copy(io.Discard, io.LimitReader(r, limit+1))
	switch {
	case errors.Is(err, zstd.ErrWindowSizeExceeded), errors.Is(err, zstd.ErrDecoderSizeExceeded), n > limit:
		return errBodyTooLarge
	case err != nil:
		return fmt.Errorf("%w: %w", errUndecodable, err)
	}
	return nil
}

// decode undoes the codings of a Content-Encoding header as a stream,
// capping the decoded size at limit so that a small compressed bomb cannot
// exhaust memory. The decoded bytes it holds are charged to mem as the
// buffer grows (never beyond limit+1 bytes); when mem has no room, the rest
// is decoded only to be counted, in constant memory, and the result is
// errBusy if the body stays within the cap. On success the caller owns
// charged bytes of mem, to release once the body is handed on.
func decode(body []byte, contentEncoding string, limit int64, mem *budget.Bytes) (decoded []byte, charged int64, err error) {
	r, closeAll, err := decoder(bytes.NewReader(body), contentEncoding, limit)
	if err != nil {
		return nil, 0, err
	}
	defer closeAll()
	grow := func(buf []byte, want int) ([]byte, bool) {
		want = int(min(int64(want), limit+1))
		if mem != nil && !mem.Acquire(int64(want-cap(buf))) {
			return buf, false
		}
		next := make([]byte, len(buf), want)
		copy(next, buf)
		charged += int64(want - cap(buf))
		return next, true
	}
	buf, ok := grow(nil, max(len(body)*4, 4096))
	for ok {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				mem.Release(charged)
				return nil, 0, errBodyTooLarge
			}
			if buf, ok = grow(buf, 2*cap(buf)); !ok {
				break
			}
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case errors.Is(err, io.EOF):
			if int64(len(buf)) > limit {
				mem.Release(charged)
				return nil, 0, errBodyTooLarge
			}
			return buf, charged, nil
		case errors.Is(err, zstd.ErrWindowSizeExceeded), errors.Is(err, zstd.ErrDecoderSizeExceeded):
			mem.Release(charged)
			return nil, 0, errBodyTooLarge
		case err != nil:
			mem.Release(charged)
			return nil, 0, fmt.Errorf("%w: %w", errUndecodable, err)
		}
	}
	// No room to hold it: count it in constant memory instead, so that the
	// cap still holds.
	mem.Release(charged)
	if err := checkDecodedSize(body, contentEncoding, limit); err != nil {
		return nil, 0, err
	}
	return nil, 0, errBusy
}

// setBody makes b the request's body, keeping ContentLength, the
// Content-Length header and GetBody (used for retries and redirects) in step.
// The body reader holds held, the buffer b may be a view of, until the
// transport closes it.
func setBody(r *http.Request, b []byte, held *heldBody) {
	r.Body = held.reader(b)
	r.ContentLength = int64(len(b))
	r.Header.Set("Content-Length", strconv.Itoa(len(b)))
	r.TransferEncoding = nil
	r.GetBody = func() (io.ReadCloser, error) { return held.reader(b), nil }
}
