package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/proxy"
)

// scripted stands in for the pipeline: it answers every request with the
// body and outcome a test sets, and records what the gateway handed it.
// What the pipeline does to a body is specified in package pipeline; here
// only what the gateway does around it.
type scripted struct {
	body []byte // nil: the body as it came
	out  focusgate.Outcome

	mu   sync.Mutex
	reqs []focusgate.Request
}

var _ focusgate.Rewriter = (*scripted)(nil)

func (s *scripted) Rewrite(_ context.Context, req focusgate.Request) ([]byte, focusgate.Outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := req
	kept.Body = bytes.Clone(req.Body) // the body's memory is the gateway's once Rewrite returns
	s.reqs = append(s.reqs, kept)
	if s.body == nil {
		return req.Body, s.out
	}
	return bytes.Clone(s.body), s.out // a body of its own, which the gateway reuses
}

func (s *scripted) requests() []focusgate.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]focusgate.Request(nil), s.reqs...)
}

// scriptedGateway is the gateway in front of rw.
func scriptedGateway(t *testing.T, rw focusgate.Rewriter) *gateway {
	t.Helper()
	return newGateway(t, nil, func(o *gatewayOptions) { o.Pipeline = rw })
}

// pages stands for n observations the pipeline considered.
func pages(n int) []focusgate.Page { return make([]focusgate.Page, n) }

// The outcome of a request reaches the client as X-Focusgate-* headers:
// the status with its reason, and the numbers where there are any.
func TestOutcomeReachesTheClientAsHeaders(t *testing.T) {
	tests := []struct {
		name string
		out  focusgate.Outcome
		want map[string]string // "" means absent
	}{
		{
			name: "pruned",
			out: focusgate.Outcome{Status: focusgate.StatusPruned, Pages: pages(2), TokensBefore: 5000, TokensAfter: 1200,
				Cache: "miss", Retriever: 1234 * time.Millisecond, Flagged: 12,
				Priced: true, SavedUSD: 0.0076, RetrieverUSD: 0.0012},
			want: map[string]string{
				proxy.HeaderStatus: "pruned", proxy.HeaderTokensBefore: "5000", proxy.HeaderTokensAfter: "1200",
				proxy.HeaderCache: "miss", proxy.HeaderRetrieverMs: "1234", proxy.HeaderFlaggedLines: "12",
				proxy.HeaderSavedUSD: "0.006400",
			},
		},
		{
			name: "served by another request's call",
			out:  focusgate.Outcome{Status: focusgate.StatusPruned, Pages: pages(1), TokensBefore: 3000, TokensAfter: 900, Cache: "shared", Retriever: 40 * time.Millisecond},
			want: map[string]string{
				proxy.HeaderStatus: "pruned", proxy.HeaderCache: "shared", proxy.HeaderRetrieverMs: "40",
				proxy.HeaderFlaggedLines: "", proxy.HeaderSavedUSD: "",
			},
		},
		{
			name: "cache hit",
			out:  focusgate.Outcome{Status: focusgate.StatusPruned, Pages: pages(1), TokensBefore: 3000, TokensAfter: 900, Cache: "hit"},
			want: map[string]string{proxy.HeaderStatus: "pruned", proxy.HeaderCache: "hit", proxy.HeaderRetrieverMs: "0"},
		},
		{
			name: "failed open",
			out:  focusgate.Outcome{Status: focusgate.StatusFailedOpen, Reason: focusgate.ReasonRetrieverHTTP5xx, Pages: pages(1), TokensBefore: 3000, TokensAfter: 3000, Cache: "miss"},
			want: map[string]string{
				proxy.HeaderStatus: "failed-open; reason=retriever-http-5xx", proxy.HeaderTokensBefore: "3000", proxy.HeaderTokensAfter: "3000",
			},
		},
		{
			name: "nothing to prune",
			out:  focusgate.Outcome{Status: focusgate.StatusSkipped, Reason: focusgate.ReasonNoObservation},
			want: map[string]string{
				proxy.HeaderStatus: "skipped; reason=no-observation", proxy.HeaderTokensBefore: "", proxy.HeaderTokensAfter: "",
				proxy.HeaderCache: "", proxy.HeaderRetrieverMs: "", proxy.HeaderSavedUSD: "",
			},
		},
		{
			name: "rescued",
			out:  focusgate.Outcome{Status: focusgate.StatusPruned, Rescue: focusgate.RescueRescued, Pages: pages(3), TokensBefore: 9000, TokensAfter: 2000},
			want: map[string]string{proxy.HeaderStatus: "pruned; rescue=rescued"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gw := scriptedGateway(t, &scripted{out: tt.out})
			resp := post(t, gw.URL+"/v1/chat/completions", []byte(`{"model":"gpt-4.1","messages":[]}`), nil)
			if body := readBody(t, resp); resp.StatusCode != http.StatusOK || string(body) != `{"ok":true}` {
				t.Errorf("the client got %d %q, want the upstream's answer", resp.StatusCode, body)
			}
			for h, want := range tt.want {
				if got := resp.Header.Get(h); got != want {
					t.Errorf("%s = %q, want %q", h, got, want)
				}
			}
		})
	}
}

// The outcome of a request focusgate tried to prune is logged once, after
// the upstream answered.
func TestOutcomeIsLogged(t *testing.T) {
	gw := scriptedGateway(t, &scripted{out: focusgate.Outcome{API: focusgate.APIChat, Status: focusgate.StatusPruned, Model: "gpt-4.1", Pages: pages(1), TokensBefore: 4000, TokensAfter: 1000, Cache: "miss"}})
	post(t, gw.URL+"/v1/chat/completions", []byte(`{"model":"gpt-4.1","messages":[]}`), map[string]string{"Authorization": "Bearer sk-client"})
	gw.logs.WaitFor(t, "msg=request")
	logs := gw.logs.String()
	if n := strings.Count(logs, "msg=observations status=pruned api=chat model=gpt-4.1"); n != 1 {
		t.Errorf("%d log lines for the pruned request, want 1:\n%s", n, logs)
	}
	if !strings.Contains(logs, "tokens_before=4000 tokens_after=1000") || strings.Contains(logs, "sk-client") {
		t.Errorf("the log line lacks the numbers or carries the key:\n%s", logs)
	}
}

// An answer of known length reaches the client before the outcome is logged,
// counted and recorded for the dashboard: that bookkeeping is not the
// client's to wait for. Here the outcome's log line waits until the client
// has read the whole answer.
func TestAnswerReachesTheClientBeforeTheBookkeeping(t *testing.T) {
	answered := make(chan struct{})
	gate := &gatedHandler{
		Handler:  slog.NewTextHandler(io.Discard, nil),
		msg:      "observations",
		answered: answered,
		result:   make(chan bool, 1),
	}
	rw := &scripted{out: focusgate.Outcome{API: focusgate.APIChat, Status: focusgate.StatusPruned, Pages: pages(1), TokensBefore: 4000, TokensAfter: 1000}}
	gw := newGateway(t, nil, func(o *gatewayOptions) {
		o.Pipeline = rw
		o.proxyOptions.Logger = slog.New(gate)
	})
	resp := post(t, gw.URL+"/v1/chat/completions", []byte(`{"model":"gpt-4.1","messages":[]}`), nil)
	if got := string(readBody(t, resp)); got != `{"ok":true}` {
		t.Fatalf("answer %q", got)
	}
	close(answered)
	if !<-gate.result {
		t.Error("the answer reached the client only once the outcome had been logged")
	}
}

// net/http reads a connection's next request only once the handler of the
// last one has returned. A client that sends requests one after another on
// one connection gets its next answer while the last request's bookkeeping
// (here, its outcome's log line) is still being done.
func TestNextRequestIsNotHeldByTheLastOnesBookkeeping(t *testing.T) {
	held := &heldHandler{Handler: slog.NewTextHandler(io.Discard, nil), msg: "observations", holding: make(chan struct{}), release: make(chan struct{})}
	rw := &scripted{out: focusgate.Outcome{API: focusgate.APIChat, Status: focusgate.StatusPruned, Pages: pages(1), TokensBefore: 4000, TokensAfter: 1000}}
	gw := newGateway(t, nil, func(o *gatewayOptions) {
		o.Pipeline = rw
		o.proxyOptions.Logger = slog.New(held)
	})
	t.Cleanup(func() { close(held.release) })
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	t.Cleanup(client.CloseIdleConnections)
	send := func() (reused bool, err error) {
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodPost,
			gw.URL+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-4.1","messages":[]}`))
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		if b, err := io.ReadAll(resp.Body); err != nil || string(b) != `{"ok":true}` {
			return false, fmt.Errorf("answer %q, %v", b, err)
		}
		return reused, nil
	}
	if _, err := send(); err != nil {
		t.Fatal(err)
	}
	<-held.holding
	type result struct {
		reused bool
		err    error
	}
	second := make(chan result, 1)
	go func() {
		reused, err := send()
		second <- result{reused, err}
	}()
	select {
	case r := <-second:
		if r.err != nil {
			t.Fatal(r.err)
		}
		if !r.reused {
			t.Error("the second request went on a new connection; the test needs it on the first one")
		}
	case <-time.After(time.Minute):
		t.Fatal("the second request on the connection was not answered while the first one's log line was held")
	}
}

// heldHandler holds the first record whose message is msg, once it has
// closed holding, until release is closed.
type heldHandler struct {
	slog.Handler
	msg              string
	holding, release chan struct{}
	once             sync.Once
}

func (h *heldHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() {
			close(h.holding)
			<-h.release
		})
	}
	return h.Handler.Handle(ctx, r)
}

// gatedHandler holds the record whose message is msg until answered is
// closed, then reports whether it was in time; it gives up after a minute
// rather than hang a test that fails.
type gatedHandler struct {
	slog.Handler
	msg      string
	answered <-chan struct{}
	result   chan bool
}

func (h *gatedHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case <-h.answered:
			h.result <- true
		case <-time.After(time.Minute):
			h.result <- false
		}
	}
	return h.Handler.Handle(ctx, r)
}

// What the pipeline returns is what goes upstream, with a Content-Length
// that matches it, compressed requests included (the pipeline reads them
// decoded, and they go on decoded).
func TestRewrittenBodyGoesUpstreamWithItsLength(t *testing.T) {
	sent := []byte(`{"model":"gpt-4.1","messages":[{"role":"user","content":"pruned"}]}`)
	body := []byte(`{"model":"gpt-4.1","messages":[{"role":"user","content":"` + strings.Repeat("a page line\\n", 200) + `"}]}`)
	for _, enc := range []string{"", "gzip", "zstd"} {
		t.Run("encoding "+enc, func(t *testing.T) {
			rw := &scripted{body: sent, out: focusgate.Outcome{Status: focusgate.StatusPruned, Pages: pages(1)}}
			gw := scriptedGateway(t, rw)
			wire, h := body, map[string]string{}
			if enc != "" {
				wire, h["Content-Encoding"] = compressors[enc](body), enc
			}
			post(t, gw.URL+"/v1/chat/completions", wire, h)
			if reqs := rw.requests(); len(reqs) != 1 || !bytes.Equal(reqs[0].Body, body) {
				t.Fatalf("the pipeline was handed %d requests; want one, with the decoded body", len(reqs))
			}
			got := gw.upstream.last(t)
			if !bytes.Equal(got.Body, sent) || got.ContentLength != int64(len(sent)) {
				t.Errorf("upstream got %d bytes, Content-Length %d; want the rewritten %d bytes", len(got.Body), got.ContentLength, len(sent))
			}
			if got.Header.Get("Content-Encoding") != "" {
				t.Errorf("a decoded body went on with Content-Encoding %q", got.Header.Get("Content-Encoding"))
			}
		})
	}
}

// The gateway hands the pipeline the API of the route, the request's own
// mode and prompt headers and the client's key; the headers go no further.
// Passthrough routes never reach the pipeline.
func TestPipelineGetsTheRequestsSettings(t *testing.T) {
	rw := &scripted{out: focusgate.Outcome{Status: focusgate.StatusSkipped, Reason: focusgate.ReasonNoObservation}}
	gw := scriptedGateway(t, rw)
	h := map[string]string{proxy.HeaderMode: "ancestors", proxy.HeaderPrompt: "defender", "Authorization": "Bearer sk-client"}
	for _, path := range []string{"/v1/chat/completions", "/responses", "/v1/embeddings"} {
		post(t, gw.URL+path, []byte(`{"model":"gpt-4.1"}`), h)
		got := gw.upstream.last(t)
		if got.Header.Get(proxy.HeaderMode) != "" || got.Header.Get(proxy.HeaderPrompt) != "" {
			t.Errorf("%s: focusgate's request headers reached the upstream", path)
		}
	}
	reqs := rw.requests()
	if len(reqs) != 2 {
		t.Fatalf("the pipeline was handed %d requests, want the chat and the Responses one", len(reqs))
	}
	for i, api := range []focusgate.API{focusgate.APIChat, focusgate.APIResponses} {
		r := reqs[i]
		if r.API != api || r.Mode != "ancestors" || r.Prompt != "defender" || r.Credential.Value != "sk-client" || r.Provider != &focusgate.OpenAIProvider || r.Sizing || r.Holdout || r.Rescue {
			t.Errorf("request %d: API %s, mode %q, prompt %q, credential set %v, sizing %v, holdout %v, rescue %v; want %s, ancestors, defender, the client's key",
				i, r.API, r.Mode, r.Prompt, r.Credential.Value != "", r.Sizing, r.Holdout, r.Rescue, api)
		}
	}
}

// What became of a request's older observations is counted, by what
// happened to each.
func TestOlderObservationsAreCounted(t *testing.T) {
	rw := &scripted{out: focusgate.Outcome{Status: focusgate.StatusPruned, Pages: pages(7), Older: focusgate.Older{Reapplied: 3, Left: 2, Pruned: 1}}}
	gw := scriptedGateway(t, rw)
	for range 2 {
		post(t, gw.URL+"/v1/chat/completions", []byte(`{"model":"gpt-4.1","messages":[]}`), nil)
	}
	gw.logs.WaitUntil(t, "two access-log lines", func(logs string) bool { return strings.Count(logs, "msg=request") >= 2 })
	m := scrape(t, gw)
	for result, want := range map[string]float64{"reapplied": 6, "left": 4, "pruned": 2} {
		if got := value(m, "focusgate_older_observations_total", map[string]string{"result": result}); got != want {
			t.Errorf("focusgate_older_observations_total{result=%q} = %v, want %v", result, got, want)
		}
	}
}
