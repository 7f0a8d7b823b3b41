package proxy

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
)

// Every test of this package runs with released bodies poisoned: a view of a
// body kept past its release reads 0xff bytes, which no JSON holds, and no
// test's bytes survive. Benchmarks measure the gateway without the poison's
// pass over every body.
func TestMain(m *testing.M) {
	flag.Parse()
	poisonReleased = flag.Lookup("test.bench").Value.String() == ""
	os.Exit(m.Run())
}

func TestReadAll(t *testing.T) {
	const limit = 100
	body := strings.Repeat("x", 60)
	for _, tc := range []struct {
		name     string
		r        io.Reader
		sizeHint int64
		want     string
		err      error
	}{
		{"size known", strings.NewReader(body), 60, body, nil},
		{"size unknown", strings.NewReader(body), -1, body, nil},
		{"read a byte at a time", iotest.OneByteReader(strings.NewReader(body)), 60, body, nil},
		{"shorter than said", strings.NewReader(body), 80, body, nil},
		{"longer than said", strings.NewReader(body), 10, body, nil},
		{"longer than said, past the limit", strings.NewReader(strings.Repeat("x", limit+1)), 10, "", errBodyTooLarge},
		{"past the limit, size unknown", strings.NewReader(strings.Repeat("x", limit+1)), -1, "", errBodyTooLarge},
		{"exactly the limit", strings.NewReader(strings.Repeat("x", limit)), limit, strings.Repeat("x", limit), nil},
		{"failing", io.MultiReader(strings.NewReader(body[:30]), iotest.ErrReader(io.ErrUnexpectedEOF)), 60, "", io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := readAll(tc.r, limit, tc.sizeHint)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if string(h.b) != tc.want {
				t.Errorf("read %q, want %q", h.b, tc.want)
			}
			h.Release()
		})
	}
}

// A body goes back to its pool with its last reference, not before: the
// handler's, a transport's reader's (closed as often as the transport
// likes) and an inspection's.
func TestABodyGoesBackWithItsLastReference(t *testing.T) {
	want := bytes.Repeat([]byte("page "), 2000)
	h := newHeldBody(int64(len(want)))
	copy(h.b, want)
	b := h.b
	r := h.reader(b)
	h.Hold() // an inspection's

	h.Release() // the handler's
	r.Close()
	r.Close()
	if !bytes.Equal(b, want) {
		t.Fatal("the body changed while an inspection still held it")
	}
	h.Release()
	if !bytes.Equal(b, bytes.Repeat([]byte{0xff}, len(want))) {
		t.Fatal("the body was not let go with its last reference")
	}
	defer func() {
		if recover() == nil {
			t.Error("a body let go once more than held did not panic")
		}
	}()
	h.Release()
}

// The transport may still be writing a body upstream after the answer has
// come and the handler has let the body go; the pool serves another request
// meanwhile. The upstream reads the body as it was sent.
func TestATransportStillWritingKeepsTheBody(t *testing.T) {
	const size = 3 << 20
	readNow, got := make(chan struct{}), make(chan []byte, 1)
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.EnableFullDuplex(); err != nil {
			t.Error(err)
		}
		w.WriteHeader(http.StatusOK)
		rc.Flush()
		<-readNow
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		got <- b
	}))
	// Small socket buffers, so that the body cannot all be in them when
	// the answer comes.
	small := func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) {
			syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
			syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4<<10)
		})
	}
	ln, err := (&net.ListenConfig{Control: small}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up.Listener.Close()
	up.Listener = ln
	up.Start()
	t.Cleanup(up.Close)
	transport := &http.Transport{DialContext: (&net.Dialer{Control: small}).DialContext}
	t.Cleanup(transport.CloseIdleConnections)

	want := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	h := newHeldBody(size)
	copy(h.b, want)
	req, _ := http.NewRequest(http.MethodPost, up.URL, nil)
	setBody(req, h.b, h)
	resp, err := transport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	h.Release() // the handler has its answer
	other := newHeldBody(size)
	copy(other.b, bytes.Repeat([]byte{'x'}, size))
	close(readNow)
	if b := <-got; !bytes.Equal(b, want) {
		t.Errorf("the upstream read %d bytes other than the %d sent", len(b), len(want))
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	other.Release()
}
