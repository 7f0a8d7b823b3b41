package proxy_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/pipeline"

	"github.com/klauspost/compress/zstd"

	"github.com/focusgate/focusgate/internal/testlog"
	"github.com/focusgate/focusgate/proxy"
)

// received is what the fake upstream saw of one request.
type received struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   []byte
	ContentLength          int64
}

// recorder is an upstream that records every request and answers with a
// fixed JSON body, unless a test gives it another handler.
type recorder struct {
	mu   sync.Mutex
	reqs []received
}

func (rec *recorder) record(r *http.Request) received {
	body, _ := io.ReadAll(r.Body)
	got := received{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), body, r.ContentLength}
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, got)
	rec.mu.Unlock()
	return got
}

func (rec *recorder) last(t *testing.T) received {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) == 0 {
		t.Fatal("the upstream received no request")
	}
	return rec.reqs[len(rec.reqs)-1]
}

type gateway struct {
	URL      string
	upstream *recorder
	logs     *testlog.Buffer
	server   *proxy.Server
	pipeline *pipeline.Pipeline // nil without a Pruner
	handling *handling          // nil for a gateway a test made from a URL
}

// handling counts the requests a test gateway is handling. An answer reaches
// the client before the gateway has done its bookkeeping (the outcome's log
// line, metrics, the holdout's step), so a test that reads those after an
// answer waits for the requests to end and their bookkeeping to be done.
type handling struct {
	mu     sync.Mutex
	ended  sync.Cond
	active int
}

func newHandling() *handling {
	h := &handling{}
	h.ended.L = &h.mu
	return h
}

func (h *handling) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.active++
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			h.active--
			h.ended.Broadcast()
			h.mu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}

// settle returns once every request the gateway has begun has ended, and its
// bookkeeping is done.
func (g *gateway) settle() {
	if g.handling == nil {
		return
	}
	g.handling.mu.Lock()
	for g.handling.active > 0 {
		g.handling.ended.Wait()
	}
	g.handling.mu.Unlock()
	g.server.Flush()
}

type (
	proxyOptions      = proxy.Options
	pipelineOptions   = pipeline.Options
	pipelineRetrieval = pipeline.Retrieval
)

// gatewayOptions are the settings of a gateway and of its request pipeline,
// which the tests set side by side, and its upstreams as the tests name
// them.
type gatewayOptions struct {
	proxyOptions
	pipelineOptions
	upstreamOptions
}

// upstreamOptions are where a test gateway's requests go: the OpenAI and
// Anthropic upstreams, which most tests set, and any other provider's by its
// name; each with a static key of the gateway's, sent as the provider's
// clients send theirs.
type upstreamOptions struct {
	Upstream          *url.URL
	UpstreamAPIKey    string
	AnthropicUpstream *url.URL
	AnthropicAPIKey   string
	Providers         map[string]testUpstream
}

type testUpstream struct {
	URL    *url.URL
	APIKey string
}

// staticKey is a static key of the gateway's, as cloudauth.Key sends one.
type staticKey struct {
	place focusgate.Credential
	key   string
}

func (k staticKey) Ready(context.Context) bool { return k.key != "" }

func (k staticKey) Sign(_ context.Context, r *http.Request, _ []byte) error {
	k.place.Set(r, k.key)
	return nil
}

// upstreams are the proxy's Upstreams for o.
func (o upstreamOptions) upstreams() map[string]proxy.Upstream {
	all := map[string]testUpstream{}
	if o.Upstream != nil || o.UpstreamAPIKey != "" {
		all["openai"] = testUpstream{o.Upstream, o.UpstreamAPIKey}
	}
	if o.AnthropicUpstream != nil || o.AnthropicAPIKey != "" {
		all["anthropic"] = testUpstream{o.AnthropicUpstream, o.AnthropicAPIKey}
	}
	for name, u := range o.Providers {
		all[name] = u
	}
	ups := map[string]proxy.Upstream{}
	for name, u := range all {
		up := proxy.Upstream{ClientFirst: true}
		if u.URL != nil {
			up.URL = u.URL.String()
		}
		if u.APIKey != "" {
			up.Signer = staticKey{focusgate.ProviderNamed(name).Credentials[0], u.APIKey}
		}
		ups[name] = up
	}
	return ups
}

// build makes the gateway; given a Pruner, in front of a pipeline that
// logs where the gateway does.
func (o gatewayOptions) build() (*proxy.Server, *pipeline.Pipeline) {
	o.proxyOptions.Upstreams = o.upstreamOptions.upstreams()
	var pl *pipeline.Pipeline
	if o.Pruner != nil {
		o.pipelineOptions.Logger = o.proxyOptions.Logger
		pl = pipeline.New(o.pipelineOptions)
		o.Pipeline = pl
	}
	return proxy.New(o.proxyOptions), pl
}

// newGateway starts a fake upstream (handler, or a recorder answering
// {"ok":true}) under /v1 and focusgate in front of it.
func newGateway(t *testing.T, handler http.HandlerFunc, configure ...func(*gatewayOptions)) *gateway {
	t.Helper()
	rec := &recorder{}
	if handler == nil {
		handler = func(w http.ResponseWriter, r *http.Request) {
			rec.record(r)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
		}
	}
	up := httptest.NewServer(handler)
	t.Cleanup(up.Close)
	base, _ := url.Parse(up.URL + "/v1")
	logs := testlog.New()
	opts := gatewayOptions{
		proxyOptions: proxy.Options{
			Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		},
		upstreamOptions: upstreamOptions{Upstream: base},
		// No deadline unless a test is about it: a busy machine must not
		// turn a prune into a timeout.
		pipelineOptions: pipeline.Options{Budget: time.Hour},
	}
	for _, c := range configure {
		c(&opts)
	}
	s, pl := opts.build()
	h := newHandling()
	gw := httptest.NewServer(h.wrap(s))
	t.Cleanup(gw.Close)
	return &gateway{URL: gw.URL, upstream: rec, logs: logs, server: s, pipeline: pl, handling: h}
}

func post(t *testing.T, url string, body []byte, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readBody(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fidelityBodies are the real agent requests plus a body built to catch
// re-serialisation: big integers, HTML characters, escapes, odd spacing,
// duplicate and unknown keys.
func fidelityBodies(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("../testdata/requests/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no request bodies in ../testdata/requests: %v", err)
	}
	bodies := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		bodies[filepath.Base(f)] = b
	}
	bodies["tricky"] = []byte("{\"seed\": 12345678901234567890, \"model\":\"gpt-4.1\" ,\"x\":1.0e+2,\n" +
		`"messages":[{"role":"user","content":"<b>&amp;</b> \u003c \/ \ud83d\ude00 é"}],"x":2,"_unknown":{"deep":[true,null]}}`)
	return bodies
}

func TestBodiesReachUpstreamByteForByte(t *testing.T) {
	gw := newGateway(t, nil)
	for name, body := range fidelityBodies(t) {
		for _, path := range []string{"/v1/chat/completions", "/chat/completions", "/v1/responses", "/responses", "/v1/embeddings"} {
			t.Run(name+path, func(t *testing.T) {
				resp := post(t, gw.URL+path, body, nil)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d: %s", resp.StatusCode, readBody(t, resp))
				}
				got := gw.upstream.last(t)
				if !bytes.Equal(got.Body, body) {
					t.Errorf("upstream received a different body:\n got %.200q\nwant %.200q", got.Body, body)
				}
				if got.ContentLength != int64(len(body)) {
					t.Errorf("Content-Length %d, want %d", got.ContentLength, len(body))
				}
			})
		}
	}
}

func TestPathsQueriesAndHeadersPassThrough(t *testing.T) {
	gw := newGateway(t, nil)
	req, _ := http.NewRequest(http.MethodGet, gw.URL+"/v1/models/gpt-4.1%2Fmini?limit=2&after=x%20y", nil)
	req.Header.Set("Authorization", "Bearer sk-client")
	req.Header.Set("OpenAI-Organization", "org-1")
	req.Header.Set("X-Forwarded-For", "10.0.0.1")
	req.Header.Set("Forwarded", "for=10.0.0.1;proto=https")
	req.Header.Set("X-Focusgate-Mode", "off")
	req.Header.Set("Connection", "keep-alive, X-Hop")
	req.Header.Set("X-Hop", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	got := gw.upstream.last(t)
	if got.Method != http.MethodGet || got.Path != "/v1/models/gpt-4.1/mini" || got.RawQuery != "limit=2&after=x%20y" {
		t.Errorf("upstream got %s %s?%s", got.Method, got.Path, got.RawQuery)
	}
	for h, want := range map[string]string{
		"Authorization":       "Bearer sk-client",
		"Openai-Organization": "org-1",
		"X-Forwarded-For":     "10.0.0.1",
		"Forwarded":           "for=10.0.0.1;proto=https",
		"X-Focusgate-Mode":    "",
		"X-Hop":               "",
	} {
		if v := got.Header.Get(h); v != want {
			t.Errorf("upstream header %s = %q, want %q", h, v, want)
		}
	}
}

func TestUpstreamKeyOnlyWhenClientSendsNone(t *testing.T) {
	gw := newGateway(t, nil, func(o *gatewayOptions) { o.UpstreamAPIKey = "sk-gateway" })

	post(t, gw.URL+"/v1/chat/completions", []byte(`{}`), nil)
	if got := gw.upstream.last(t).Header.Get("Authorization"); got != "Bearer sk-gateway" {
		t.Errorf("without client key: Authorization %q, want the gateway's", got)
	}
	post(t, gw.URL+"/v1/chat/completions", []byte(`{}`), map[string]string{"Authorization": "Bearer sk-client"})
	if got := gw.upstream.last(t).Header.Get("Authorization"); got != "Bearer sk-client" {
		t.Errorf("with client key: Authorization %q, want the client's", got)
	}
	// An answer is sent before its access-log line is written.
	gw.logs.WaitUntil(t, "two access-log lines", func(logs string) bool { return strings.Count(logs, "msg=request") >= 2 })
	if strings.Contains(gw.logs.String(), "sk-") {
		t.Errorf("a key reached the logs:\n%s", gw.logs.String())
	}
}

func TestUpstreamErrorsArriveVerbatim(t *testing.T) {
	for _, status := range []int{400, 401, 404, 429, 500, 503} {
		body := []byte(`{"error":{"message":"nope","type":"x","code":` + http.StatusText(status)[:1] + `}}` + "\n")
		gw := newGateway(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "7")
			w.Header().Set("X-Request-Id", "req_1")
			w.WriteHeader(status)
			w.Write(body)
		})
		for _, path := range []string{"/v1/chat/completions", "/v1/files"} {
			resp := post(t, gw.URL+path, []byte(`{"model":"m"}`), nil)
			got := readBody(t, resp)
			if resp.StatusCode != status || !bytes.Equal(got, body) ||
				resp.Header.Get("Retry-After") != "7" || resp.Header.Get("X-Request-Id") != "req_1" {
				t.Errorf("%s %d: got %d %q with headers %v", path, status, resp.StatusCode, got, resp.Header)
			}
		}
	}
}

func TestOversizedBodiesGet413(t *testing.T) {
	const limit = 1 << 10
	gw := newGateway(t, nil, func(o *gatewayOptions) { o.MaxBodyBytes = limit })
	big := bytes.Repeat([]byte("a"), limit+1)

	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write(bytes.Repeat([]byte(" "), 64*limit))
	zw.Close()
	if bomb.Len() >= limit {
		t.Fatalf("the gzip bomb is %d bytes; it must be under the limit to prove the cap applies after decoding", bomb.Len())
	}

	tests := []struct {
		name, path string
		body       io.Reader
		length     int64 // -1: chunked, no Content-Length
		encoding   string
	}{
		{"inspected", "/v1/chat/completions", bytes.NewReader(big), int64(len(big)), ""},
		{"inspected chunked", "/v1/chat/completions", io.MultiReader(bytes.NewReader(big)), -1, ""},
		{"inspected gzip bomb", "/v1/chat/completions", bytes.NewReader(bomb.Bytes()), int64(bomb.Len()), "gzip"},
		{"passthrough", "/v1/files", bytes.NewReader(big), int64(len(big)), ""},
		{"passthrough chunked", "/v1/files", io.MultiReader(bytes.NewReader(big)), -1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, gw.URL+tt.path, tt.body)
			req.ContentLength = tt.length
			if tt.encoding != "" {
				req.Header.Set("Content-Encoding", tt.encoding)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e struct {
				Error struct{ Message, Type, Code string }
			}
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				t.Fatalf("413 body is not OpenAI's error shape: %v", err)
			}
			if resp.StatusCode != http.StatusRequestEntityTooLarge || e.Error.Code != "request_too_large" || e.Error.Message == "" {
				t.Errorf("got %d %+v, want 413 with an OpenAI error", resp.StatusCode, e)
			}
		})
	}
}

// A compressed body that focusgate decodes but does not prune (here, with
// no pipeline; also one that is not JSON or holds no page) goes upstream as
// it came, still compressed. A pruned one goes decoded
// (TestRewrittenBodyGoesUpstreamWithItsLength).
func TestCompressedBodiesNotPrunedGoAsTheyCame(t *testing.T) {
	body, err := os.ReadFile("../testdata/requests/genericagent_webarena_shopping_step0.json")
	if err != nil {
		t.Fatal(err)
	}
	gw := newGateway(t, nil)
	for enc, fn := range compressors {
		for name, plain := range map[string][]byte{"a page": body, "not JSON": []byte("hello world"), "JSON and garbage": []byte(`{"model":"x"}garbage`)} {
			t.Run(enc+"/"+name, func(t *testing.T) {
				wire := fn(plain)
				resp := post(t, gw.URL+"/v1/chat/completions", wire, map[string]string{"Content-Encoding": enc})
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d", resp.StatusCode)
				}
				got := gw.upstream.last(t)
				if !bytes.Equal(got.Body, wire) || got.Header.Get("Content-Encoding") != enc || got.ContentLength != int64(len(wire)) {
					t.Errorf("upstream got %d bytes, Content-Encoding %q, Content-Length %d; want the %d bytes sent, %q",
						len(got.Body), got.Header.Get("Content-Encoding"), got.ContentLength, len(wire), enc)
				}
			})
		}
	}
	t.Run("unknown encoding is forwarded as sent", func(t *testing.T) {
		raw := []byte("\x0b\x01\x80not really brotli")
		post(t, gw.URL+"/v1/chat/completions", raw, map[string]string{"Content-Encoding": "br"})
		got := gw.upstream.last(t)
		if !bytes.Equal(got.Body, raw) || got.Header.Get("Content-Encoding") != "br" {
			t.Errorf("got %q with Content-Encoding %q", got.Body, got.Header.Get("Content-Encoding"))
		}
	})
	t.Run("non-JSON body is forwarded unchanged", func(t *testing.T) {
		raw := []byte("this is not JSON {")
		post(t, gw.URL+"/v1/chat/completions", raw, nil)
		if got := gw.upstream.last(t); !bytes.Equal(got.Body, raw) {
			t.Errorf("got %q", got.Body)
		}
	})
}

// The client must read each server-sent event while the upstream is still
// working on the next: the upstream sends one event, then waits until the
// test has seen it at the client before sending the rest.
func TestStreamsAreFlushedEventByEvent(t *testing.T) {
	for _, path := range []string{"/v1/chat/completions", "/v1/responses", "/v1/completions"} {
		t.Run(path, func(t *testing.T) {
			firstSeen := make(chan struct{})
			gw := newGateway(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "data: {\"n\":1}\n\n")
				w.(http.Flusher).Flush()
				select {
				case <-firstSeen:
				case <-r.Context().Done():
					return
				case <-time.After(time.Minute):
					return // the client never saw the first event: the test fails below
				}
				io.WriteString(w, "data: {\"n\":2}\n\ndata: [DONE]\n\n")
			})
			resp := post(t, gw.URL+path, []byte(`{"stream":true}`), nil)
			rd := bufio.NewReader(resp.Body)
			line, err := rd.ReadString('\n')
			if err != nil || line != "data: {\"n\":1}\n" {
				t.Fatalf("first event: %q, %v", line, err)
			}
			close(firstSeen)
			rest, _ := io.ReadAll(rd)
			if string(rest) != "\ndata: {\"n\":2}\n\ndata: [DONE]\n\n" {
				t.Errorf("rest of stream: %q", rest)
			}
		})
	}
}

func TestClientCancelCancelsUpstream(t *testing.T) {
	arrived := make(chan struct{})
	cancelled := make(chan struct{})
	gw := newGateway(t, func(w http.ResponseWriter, r *http.Request) {
		// net/http notices a closed connection only once the body is read.
		io.ReadAll(r.Body)
		close(arrived)
		<-r.Context().Done()
		close(cancelled)
	})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/v1/chat/completions", strings.NewReader(`{}`))
	go func() {
		<-arrived
		cancel()
	}()
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("the cancelled request succeeded")
	}
	select {
	case <-cancelled:
	case <-time.After(time.Minute):
		t.Fatal("the upstream request was not cancelled after the client went away")
	}
}

// A client that goes away in the middle of a stream makes ReverseProxy abort
// the response with http.ErrAbortHandler; that is routine, not a crash.
func TestAbortedStreamIsNotLoggedAsPanic(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	gw := newGateway(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; ; i++ {
			if _, err := io.WriteString(w, "data: {}\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-release:
				return
			default:
			}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/v1/chat/completions", strings.NewReader(`{"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	bufio.NewReader(resp.Body).ReadString('\n')
	cancel()
	resp.Body.Close()

	// The access log line is written when the handler returns, after any panic.
	gw.logs.WaitFor(t, "aborted=true")
	if logs := gw.logs.String(); strings.Contains(logs, "panic") {
		t.Errorf("an aborted stream was logged as a panic:\n%s", logs)
	}
}

// An upstream the gateway cannot reach gets the client a 502 that names the
// upstream's host and why, in a few words, and nothing of the request's path
// or query.
func TestUnreachableUpstreamGets502(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadHost := dead.Listener.Addr().String()
	dead.Close()
	hangup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(hangup.Close)
	for _, tc := range []struct{ name, upstream, want string }{
		{"refused", "http://" + deadHost + "/v1", "the upstream " + deadHost + " could not be reached: it refused the connection"},
		{"hung up", hangup.URL + "/v1", "the upstream " + hangup.Listener.Addr().String() + " could not be reached: it closed the connection without an answer"},
		{"no such name", "http://upstream.invalid/v1", "the upstream upstream.invalid could not be reached: its name does not resolve from the gateway"},
	} {
		// The name's look-up fails as a resolver says so, with no resolver
		// asked: a machine without one would time out instead.
		noDNS := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if host, _, _ := net.SplitHostPort(addr); host == "upstream.invalid" {
				return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}}
			}
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}}
		t.Cleanup(noDNS.CloseIdleConnections)
		gw := httptest.NewServer(proxy.New(proxy.Options{Transport: noDNS, Upstreams: map[string]proxy.Upstream{"openai": {URL: tc.upstream}}}))
		t.Cleanup(gw.Close)
		resp := post(t, gw.URL+"/v1/chat/completions?key=sk-in-query", []byte(`{}`), nil)
		var e struct {
			Error struct{ Message, Type, Code string }
		}
		json.Unmarshal(readBody(t, resp), &e)
		if resp.StatusCode != http.StatusBadGateway || e.Error.Code != "bad_gateway" || !strings.HasSuffix(e.Error.Message, tc.want) {
			t.Errorf("%s: got %d %+v, want 502 bad_gateway saying %q", tc.name, resp.StatusCode, e, tc.want)
		}
		if strings.Contains(e.Error.Message, "sk-in-query") || strings.Contains(e.Error.Message, "/chat") {
			t.Errorf("%s: the message names the request: %q", tc.name, e.Error.Message)
		}
	}
}

func TestHealthAndReadiness(t *testing.T) {
	redisDown := func() error { return io.ErrUnexpectedEOF }
	var srv *proxy.Server
	rec := &recorder{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rec.record(r) }))
	t.Cleanup(up.Close)
	base, _ := url.Parse(up.URL)
	srv = proxy.New(proxy.Options{Upstreams: map[string]proxy.Upstream{"openai": {URL: base.String()}}, Checks: map[string]proxy.Check{"redis": redisDown}})
	gw := httptest.NewServer(srv)
	t.Cleanup(gw.Close)

	get := func(path string) (int, map[string]any) {
		resp, err := http.Get(gw.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	code, body := get("/readyz")
	if code != http.StatusOK || !strings.HasPrefix(body["checks"].(map[string]any)["redis"].(string), "down") {
		t.Errorf("/readyz with Redis down: %d %v; want 200 reporting redis down", code, body)
	}
	srv.Drain()
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz while draining: %d, want 503", code)
	}
	if len(rec.reqs) != 0 {
		t.Errorf("own endpoints reached the upstream: %v", rec.reqs)
	}
}

// compressors write a body in each Content-Encoding focusgate decodes,
// stacked ones included.
var compressors = map[string]func([]byte) []byte{
	"gzip": func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	},
	"deflate": func(b []byte) []byte {
		var buf bytes.Buffer
		w := zlib.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	},
	"zstd": func(b []byte) []byte {
		enc, _ := zstd.NewWriter(nil)
		defer enc.Close()
		return enc.EncodeAll(b, nil)
	},
}

// The cap on a body's decoded size holds on the passthrough routes too: a
// compressed body that decodes past it gets 413, one within it is forwarded
// as it came, still compressed.
func TestDecodedCapOnPassthroughRoutes(t *testing.T) {
	gw := newGateway(t, nil, func(o *gatewayOptions) { o.MaxBodyBytes = 4 << 20 })
	small := bytes.Repeat([]byte(`{"input":"embed me"}`), 1000)
	big := bytes.Repeat([]byte("0123456789"), 800_000) // 8 MB
	for _, enc := range []string{"gzip", "deflate", "zstd", "gzip, gzip"} {
		encode := func(b []byte) []byte {
			for _, c := range strings.Split(enc, ", ") {
				b = compressors[c](b)
			}
			return b
		}
		t.Run(enc, func(t *testing.T) {
			resp := post(t, gw.URL+"/v1/embeddings", encode(big), map[string]string{"Content-Encoding": enc})
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("8 MB decoded under a 4 MiB cap: %d, want 413", resp.StatusCode)
			}
			sent := encode(small)
			resp = post(t, gw.URL+"/v1/embeddings", sent, map[string]string{"Content-Encoding": enc})
			got := gw.upstream.last(t)
			if resp.StatusCode != http.StatusOK || !bytes.Equal(got.Body, sent) || got.Header.Get("Content-Encoding") != enc {
				t.Errorf("a small body: %d, forwarded %d bytes with Content-Encoding %q; want it as it came", resp.StatusCode, len(got.Body), got.Header.Get("Content-Encoding"))
			}
		})
	}
}

// Without tracing, a client's trace headers reach the upstream as it sent
// them: the gateway adds no span of its own.
func TestTraceHeadersPassUntouchedWithoutTracing(t *testing.T) {
	gw := newGateway(t, nil)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	post(t, gw.URL+"/v1/chat/completions", []byte(`{"model":"gpt-4.1","messages":[]}`), map[string]string{"Traceparent": tp, "Tracestate": "vendor=1"})
	got := gw.upstream.last(t)
	if got.Header.Get("Traceparent") != tp || got.Header.Get("Tracestate") != "vendor=1" {
		t.Errorf("trace headers upstream: %q, %q", got.Header.Get("Traceparent"), got.Header.Get("Tracestate"))
	}
}
