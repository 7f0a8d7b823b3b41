package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/focusgate/focusgate/internal/allocs"
)

// echoUpstream is an upstream that reads each request body whole and answers
// with it, so that a test sees exactly what reached it.
func echoUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Content-Length", strconv.FormatInt(r.ContentLength, 10))
		w.Write(b)
	}))
	t.Cleanup(up.Close)
	return up
}

// Every body reaches the upstream whole and unchanged over the gateway's
// transport, whether it is held in memory, as the gateway's are, or only a
// reader, at every size around the transport's 4 KiB buffer and its 32 KiB
// copies.
func TestUpstreamBodiesArriveWhole(t *testing.T) {
	up := echoUpstream(t)
	tr := newTransport(time.Minute)
	t.Cleanup(tr.CloseIdleConnections)
	bodies := map[string]func(b []byte) io.ReadCloser{
		"held":        func(b []byte) io.ReadCloser { return holding(b).reader(b) },
		"bytes":       func(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) },
		"reader only": func(b []byte) io.ReadCloser { return io.NopCloser(iotest.HalfReader(bytes.NewReader(b))) },
	}
	for name, body := range bodies {
		for _, n := range []int{1, 4000, 4096, 32 << 10, 100_000, 1 << 20} {
			want := []byte(strings.Repeat("abcdefghijklmnopqrstuvwxyz\n", n/27+1)[:n])
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, up.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Body, req.ContentLength = body(bytes.Clone(want)), int64(n)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatalf("%s, %d bytes: %v", name, n, err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("%s, %d bytes: status %d, %v", name, n, resp.StatusCode, err)
			}
			if !bytes.Equal(got, want) || resp.Header.Get("X-Content-Length") != strconv.Itoa(n) {
				t.Errorf("%s, %d bytes: the upstream read %d bytes (Content-Length %s), not the body sent",
					name, n, len(got), resp.Header.Get("X-Content-Length"))
			}
		}
	}
}

// TestAllocationOfAHeldBodyWrittenUpstream holds the gateway's upstream
// connections to writing a body held in memory from where it lies: the
// transport's own copy of it, 32 KiB allocated for every request, is gone.
// make test runs it with the budgets, without the race detector, which
// allocates for itself; under -race the requests only run.
func TestAllocationOfAHeldBodyWrittenUpstream(t *testing.T) {
	up := echoUpstream(t)
	body := bytes.Repeat([]byte("x"), 100_000)
	perRequest := func(tr *http.Transport) float64 {
		t.Cleanup(tr.CloseIdleConnections)
		var failed error
		m := allocs.Measure(3, 30, func(int) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, up.URL, nil)
			if err != nil {
				failed = err
				return
			}
			setBody(req, body, holding(body))
			resp, err := tr.RoundTrip(req)
			if err != nil {
				failed = err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
		if failed != nil {
			t.Fatal(failed)
		}
		return m.Bytes
	}
	gateway := newTransport(time.Minute)
	stock := gateway.Clone()
	stock.DialContext = nil // net/http's own dialer, whose connections copy bodies
	ours, theirs := perRequest(gateway), perRequest(stock)
	if allocs.Race {
		t.Log("the race detector allocates for itself: the requests ran, the run without -race compares them")
		return
	}
	if theirs-ours < 30<<10 {
		t.Errorf("a request allocates %.0f bytes over the gateway's transport and %.0f over one with net/http's connections: "+
			"want at least the 32 KiB copy buffer fewer", ours, theirs)
	}
}

// A body longer than its Content-Length puts no more than that on the wire:
// the bytes after it would be read upstream as the start of another request.
func TestABodyConnWritesNoMoreThanTheLimit(t *testing.T) {
	body := []byte(strings.Repeat("a", 100) + "GET /smuggled HTTP/1.1\r\nHost: upstream\r\n\r\n")
	for name, r := range map[string]io.Reader{
		"held":        holding(body).reader(body),
		"reader only": iotest.HalfReader(bytes.NewReader(body)),
	} {
		client, server := net.Pipe()
		wrote := make(chan error, 1)
		go func() {
			_, err := bodyConn{client}.ReadFrom(&io.LimitedReader{R: r, N: 100})
			client.Close()
			wrote <- err
		}()
		got, err := io.ReadAll(server)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-wrote; err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(got) != string(body[:100]) {
			t.Errorf("%s: %d bytes written, want the first 100: %q", name, len(got), got)
		}
	}
}

// A WebSocket passed through to a plain-HTTP upstream ends each direction on
// its own: the client's half-close reaches the upstream, whose last words
// still reach the client.
func TestAnUpgradedConnectionHalfCloses(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
		rw.Flush()
		io.Copy(conn, rw) // echoes until the client's half of the connection ends
		conn.Write([]byte("bye"))
	}))
	t.Cleanup(up.Close)
	base, err := url.Parse(up.URL + "/v1")
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(New(Options{Upstreams: map[string]Upstream{"openai": {URL: base.String()}}}))
	t.Cleanup(gw.Close)

	conn, err := net.Dial("tcp", gw.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET /v1/realtime HTTP/1.1\r\nHost: gateway\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", resp.StatusCode)
	}
	fmt.Fprint(conn, "ping")
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if string(rest) != "pingbye" {
		t.Errorf("the client read %q after its half-close, want %q", rest, "pingbye")
	}
}
