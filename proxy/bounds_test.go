package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/focusgate/focusgate/pipeline"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/cache/cachetest"
	"github.com/focusgate/focusgate/internal/redistest"
	"github.com/focusgate/focusgate/proxy"
	"github.com/focusgate/focusgate/prune"
)

// bigPage is a GenericAgent request whose tree is about size bytes: a
// catalogue of products, as a long listing page gives.
func bigPage(t *testing.T, size int) []byte {
	t.Helper()
	var b strings.Builder
	b.WriteString("RootWebArea 'Catalogue', focused\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "\t[a%d] link 'Product number %d with a long descriptive name'\n\t\tStaticText 'Price $%d.99'\n", i, i, i)
	}
	return genericAgentBody(t, "Buy the cheapest product", strings.TrimSuffix(b.String(), "\n"))
}

// prunerFor is a pruner whose only bound is the gateway's: its retriever
// calls and cache waits never time out on their own.
func prunerFor(rt *retriever, model string, store cache.Store) *prune.Pruner {
	return prune.New(prune.Config{RetrieverModel: model, MinTokens: 1000, UseHistory: true},
		prune.NewOpenAIRetriever(prune.RetrieverConfig{BaseURL: rt.URL, Model: model, Timeout: time.Hour}),
		cache.New(store, nil))
}

// The retriever timeout bounds everything focusgate does before forwarding:
// however long detection, counting, the retriever or another replica's
// computation would take, the original request goes out at the deadline.
// (How soon after the deadline is measured, not asserted: see BENCHMARKS.md.)
func TestDeadlineBoundsAllOfFocusgatesWork(t *testing.T) {
	const deadline = 2 * time.Second
	hang := reply(0, "")

	t.Run("large page, hanging retriever", func(t *testing.T) {
		rt := newRetriever(t, hang)
		gw := newGateway(t, nil, func(o *gatewayOptions) {
			o.Pruner, o.Budget = prunerFor(rt, "m", cache.NewMemory(1<<20, time.Hour)), deadline
		})
		body := bigPage(t, 4<<20)
		start := time.Now()
		resp := post(t, gw.URL+"/v1/chat/completions", body, nil)
		t.Logf("%d MB page answered after %v", len(body)>>20, time.Since(start))
		assertFailedOpen(t, resp, gw.upstream.last(t).Body, body, "timeout")
	})

	t.Run("three replicas sharing Redis, hanging retriever", func(t *testing.T) {
		url := redistest.Shared(t)
		rt := newRetriever(t, hang)
		model := fmt.Sprintf("model-%s-%d", t.Name(), time.Now().UnixNano()) // keys of its own on a shared server
		var gws []*gateway
		for range 3 {
			store := cachetest.NewStore(t, url)
			gws = append(gws, newGateway(t, nil, func(o *gatewayOptions) {
				o.Pruner, o.Budget = prunerFor(rt, model, store), deadline
			}))
		}
		body := readFile(t, laptopRequest)
		var wg sync.WaitGroup
		for i, gw := range gws {
			wg.Go(func() {
				start := time.Now()
				resp := post(t, gw.URL+"/v1/chat/completions", body, nil)
				t.Logf("replica %d answered after %v", i, time.Since(start))
				sent := gw.upstream.last(t).Body
				assertFailedOpen(t, resp, sent, body, "timeout")
			})
		}
		wg.Wait()
	})
}

// panickingPruner stands for a defect in pruning.
type panickingPruner struct{ pipeline.Pruner }

func (panickingPruner) Prune(context.Context, prune.Input) prune.Result { panic("pruning defect") }

// A panic while a request is inspected costs the request nothing: it goes
// out as it came, whether its page was found on the request's goroutine
// (small bodies) or on the inspection's own.
func TestAPanicWhileInspectingForwardsTheOriginal(t *testing.T) {
	for _, size := range []int{16 << 10, 256 << 10} {
		t.Run(fmt.Sprintf("%d KB page", size>>10), func(t *testing.T) {
			gw := newGateway(t, nil, func(o *gatewayOptions) { o.Pruner = panickingPruner{} })
			body := bigPage(t, size)
			resp := post(t, gw.URL+"/v1/chat/completions", body, nil)
			assertFailedOpen(t, resp, gw.upstream.last(t).Body, body, "internal-error")
			gw.logs.WaitFor(t, "panic inspecting a request")
		})
	}
}

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

func assertFailedOpen(t *testing.T, resp *http.Response, sent, body []byte, reason string) {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d, want the upstream's 200", resp.StatusCode)
	}
	if got, want := resp.Header.Get(proxy.HeaderStatus), "failed-open; reason="+reason; got != want {
		t.Errorf("%s = %q, want %q", proxy.HeaderStatus, got, want)
	}
	if !bytes.Equal(sent, body) {
		t.Errorf("the upstream received %d bytes, not the original %d", len(sent), len(body))
	}
}

// While a request holds the inspection budget, a request that would exceed
// it is forwarded as it came, at once, never rejected.
func TestRequestsOverTheInspectionBudgetGoOutUninspected(t *testing.T) {
	release := make(chan struct{})
	asked := make(chan struct{}, 1)
	rt := newRetriever(t, func(lines []string) (int, string) {
		asked <- struct{}{}
		<-release
		return keep("[a237] combobox")(lines)
	})
	body := readFile(t, laptopRequest)
	gw := newGateway(t, nil, func(o *gatewayOptions) {
		o.Pruner = prunerFor(rt, "m", cache.NewMemory(1<<20, time.Hour))
		// Room for one such request: its body, and what detection holds of
		// it (about two and a half times the body), not for two bodies more.
		o.InspectBudgetBytes = int64(len(body)) * 4
	})

	first := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/v1/chat/completions", bytes.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
		}
		first <- resp
	}()
	select { // the first request is being inspected
	case <-asked:
	case r := <-first:
		if r != nil {
			t.Fatalf("the first request was answered without asking the retriever: %s", r.Header.Get(proxy.HeaderStatus))
		}
		t.FailNow()
	}

	other := bytes.Replace(body, []byte("Standard Laptop"), []byte("Standard Desktop"), 1)
	resp := post(t, gw.URL+"/v1/chat/completions", other, nil)
	if got := resp.Header.Get(proxy.HeaderStatus); got != "skipped; reason=busy" {
		t.Errorf("%s = %q, want skipped; reason=busy", proxy.HeaderStatus, got)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Equal(gw.upstream.last(t).Body, other) {
		t.Error("the request over the budget did not reach the upstream as it came")
	}

	close(release)
	if r := <-first; r != nil {
		r.Body.Close()
		if got := r.Header.Get(proxy.HeaderStatus); got != "pruned" {
			t.Errorf("the request within the budget: %s = %q, want pruned", proxy.HeaderStatus, got)
		}
	}
	// The budget is free again.
	resp = post(t, gw.URL+"/v1/chat/completions", other, nil)
	if got := resp.Header.Get(proxy.HeaderStatus); got == "skipped; reason=busy" {
		t.Errorf("the budget was not given back: %s = %q", proxy.HeaderStatus, got)
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
	rt := newRetriever(t, keep("[a237] combobox"))
	gw := pruningGateway(t, rt)
	body := readFile(t, laptopRequest)

	resp := post(t, gw.URL+"/v1/chat/completions", body, nil)
	if resp.Header.Get(proxy.HeaderStatus) != "pruned" || len(gw.upstream.last(t).Body) >= len(body) {
		t.Fatal("the request was not pruned")
	}
	resp = post(t, gw.URL+"/v1/files", []byte("plain upload"), nil)
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

// Once the server stops pruning for shutdown, a request waiting for the
// retriever goes out unpruned at once, and later ones are not inspected.
func TestStopPruningSendsWaitingRequestsOnUnpruned(t *testing.T) {
	asked := make(chan struct{}, 1)
	rt := newRetriever(t, func([]string) (int, string) {
		asked <- struct{}{}
		return 0, "" // hang
	})
	body := readFile(t, laptopRequest)
	gw := newGateway(t, nil, func(o *gatewayOptions) {
		o.Pruner = prunerFor(rt, "m", cache.NewMemory(1<<20, time.Hour))
	})
	gwURL := gw.URL

	done := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, gwURL+"/v1/chat/completions", bytes.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	<-asked
	gw.pipeline.Stop()
	resp := <-done
	if resp == nil {
		t.FailNow()
	}
	resp.Body.Close()
	assertFailedOpen(t, resp, gw.upstream.last(t).Body, body, "shutdown")

	later := post(t, gwURL+"/v1/chat/completions", body, nil)
	if got := later.Header.Get(proxy.HeaderStatus); got != "skipped; reason=shutdown" {
		t.Errorf("after Stop: %s = %q, want skipped; reason=shutdown", proxy.HeaderStatus, got)
	}
}
