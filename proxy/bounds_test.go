package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/pipeline"
	"github.com/focusgate/focusgate/proxy"
	"github.com/focusgate/focusgate/prune"
)

// panickingPruner stands for a defect in pruning.
type panickingPruner struct{ pipeline.Pruner }

func (panickingPruner) Prune(context.Context, prune.Input) prune.Result { panic("pruning defect") }

// A body whose Content-Encoding does not decode goes upstream exactly as it
// came, encoding and all, reported skipped: the pruner would panic if the
// body were inspected, and report failed-open.
func TestUndecodableBodyGoesOutAsItCame(t *testing.T) {
	gw := newGateway(t, nil, func(o *gatewayOptions) { o.Pruner = panickingPruner{} })
	raw := []byte("\x1f\x8bnot gzip at all")
	resp := post(t, gw.URL+"/v1/chat/completions", raw, map[string]string{"Content-Encoding": "gzip"})
	if got, want := resp.Header.Get(proxy.HeaderStatus), "skipped; reason=undecodable-body"; got != want {
		t.Errorf("%s = %q, want %q", proxy.HeaderStatus, got, want)
	}
	got := gw.upstream.last(t)
	if !bytes.Equal(got.Body, raw) || got.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("the upstream received %q with Content-Encoding %q; want the body as sent, gzip", got.Body, got.Header.Get("Content-Encoding"))
	}
}

// rawRequest writes a request by hand on a new connection and returns it,
// for clients that misbehave in ways net/http's client cannot.
func rawRequest(t *testing.T, gatewayURL, head string, body string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(gatewayURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, head+"\r\n"+body); err != nil {
		t.Fatal(err)
	}
	return conn
}

// A client that stops sending its body is cut after the body-read timeout,
// on the inspected routes and on those passed through alike, and is told so.
func TestSlowBodiesAreCutOnEveryRoute(t *testing.T) {
	for _, path := range []string{"/v1/chat/completions", "/v1/files"} {
		t.Run(path, func(t *testing.T) {
			gotBody := make(chan error, 1)
			gw := newGateway(t, func(w http.ResponseWriter, r *http.Request) {
				_, err := io.ReadAll(r.Body)
				gotBody <- err
			}, func(o *gatewayOptions) { o.BodyReadTimeout = 300 * time.Millisecond })

			head := "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n"
			conn := rawRequest(t, gw.URL, head, `{"model":`) // and then nothing more
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer to a stalled body: %v", err)
			}
			if resp.StatusCode != http.StatusRequestTimeout {
				t.Errorf("status %d, want 408", resp.StatusCode)
			}
			select {
			case err := <-gotBody:
				if err == nil {
					t.Error("the upstream received a whole body the client never sent")
				}
			default: // the inspected route never contacts the upstream
			}
		})
	}
}

// A client that half-closes its connection after sending the request is
// indistinguishable from one that left; either way it is never sent
// focusgate's internal 499, which only the log shows.
func TestHalfClosedClientNeverSees499(t *testing.T) {
	gw := newGateway(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // answers only when the gateway gives up
	})
	conn := rawRequest(t, gw.URL, "GET /v1/models HTTP/1.1\r\nHost: x\r\n", "")
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(conn)
	if bytes.Contains(got, []byte("499")) {
		t.Errorf("the client received %q", got)
	}
	gw.logs.WaitFor(t, "status=499")
}

// The access log's bytes_in is what the client sent, whatever went upstream.
func TestAccessLogCountsTheBytesTheClientSent(t *testing.T) {
	gw := scriptedGateway(t, &scripted{body: []byte(`{"model":"gpt-4.1","messages":[]}`), out: focusgate.Outcome{Status: focusgate.StatusPruned, Pages: pages(1)}})
	body := []byte(`{"model":"gpt-4.1","messages":[{"role":"user","content":"` + strings.Repeat("a line of a page\\n", 100) + `"}]}`)

	post(t, gw.URL+"/v1/chat/completions", body, nil)
	if len(gw.upstream.last(t).Body) >= len(body) {
		t.Fatal("the request was not rewritten")
	}
	resp := post(t, gw.URL+"/v1/files", []byte("plain upload"), nil)
	resp.Body.Close()

	for _, want := range []string{
		"path=/v1/chat/completions status=200 duration=",
		"bytes_in=" + strconv.Itoa(len(body)) + " ",
		"path=/v1/files status=200",
		"bytes_in=12 ",
	} {
		gw.logs.WaitFor(t, want)
	}
}
