package proxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/internal/keys"
	"github.com/focusgate/focusgate/internal/testlog"
	"github.com/focusgate/focusgate/proxy"
	"github.com/focusgate/focusgate/prune"
)

const (
	upstreamKey = "sk-upstream-company-key-0123456789"
	aliceKey    = "fg-alice-0123456789abcdef"
	bobKey      = "fg-bob-0123456789abcdef0"
)

// teamKeys is a keys file with alice's key in plain text and bob's stored
// as its digest.
var teamKeys = "# the team's gateway keys\n\nalice:" + aliceKey + "\n" + keys.Hash("bob", bobKey) + "\n"

// writeKeys replaces the keys file atomically, as an editor or a Secret
// update does, so that a poll never reads half a file.
func writeKeys(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func openKeys(t *testing.T, content string) (*keys.File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys")
	writeKeys(t, path, content)
	f, err := keys.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f, path
}

// countingUpstream records every request and counts them.
type countingUpstream struct {
	recorder
	n atomic.Int32
}

// keyedGateway is focusgate with gateway keys in front of an upstream whose
// base path is /tenant-a/v1, as in a multi-tenant deployment.
type keyedGateway struct {
	URL      string
	srv      *proxy.Server
	upstream *countingUpstream
	logs     *testlog.Buffer
}

func newKeyedGateway(t *testing.T, k proxy.Keys, configure ...func(*gatewayOptions)) *keyedGateway {
	t.Helper()
	up := &countingUpstream{}
	upSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up.n.Add(1)
		up.record(r)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(upSrv.Close)
	base, _ := url.Parse(upSrv.URL + "/tenant-a/v1")
	logs := testlog.New()
	opts := gatewayOptions{upstreamOptions: upstreamOptions{Upstream: base, AnthropicUpstream: base, UpstreamAPIKey: upstreamKey}, proxyOptions: proxy.Options{
		Keys:   k,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}}
	for _, c := range configure {
		c(&opts)
	}
	srv, _ := opts.build()
	gw := httptest.NewUnstartedServer(srv)
	gw.Listener = proxy.Harden(gw.Config, gw.Listener)
	gw.Start()
	t.Cleanup(gw.Close)
	return &keyedGateway{URL: gw.URL, srv: srv, upstream: up, logs: logs}
}

// send makes one request with the given Authorization header values.
func send(t *testing.T, method, url string, auth ...string) (*http.Response, []byte) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`)
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range auth {
		req.Header.Add("Authorization", a)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// checkOpenAIError fails unless body is an OpenAI-shaped error with code.
func checkOpenAIError(t *testing.T, body []byte, code string) {
	t.Helper()
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    string  `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" || e.Error.Code != code {
		t.Errorf("body %s is not an OpenAI error with code %q (%v)", body, code, err)
	}
}

func TestGatewayKeysGuardEveryProxiedRoute(t *testing.T) {
	f, _ := openKeys(t, teamKeys)
	gw := newKeyedGateway(t, f)

	routes := []struct{ method, path string }{
		{http.MethodPost, "/v1/chat/completions"},
		{http.MethodPost, "/v1/responses"},
		{http.MethodPost, "/chat/completions"},
		{http.MethodDelete, "/v1/files/file-abc"},
		{http.MethodGet, "/v1/organization/api_keys"},
		{http.MethodPost, "/v1/fine_tuning/jobs"},
	}
	rejected := []struct {
		name string
		auth []string
	}{
		{"no Authorization", nil},
		{"empty Authorization", []string{""}},
		{"Bearer without a key", []string{"Bearer "}},
		{"another scheme", []string{"Basic " + aliceKey}},
		{"unknown key", []string{"Bearer fg-mallory-0123456789abcdef"}},
		{"the upstream key itself", []string{"Bearer " + upstreamKey}},
		{"a key's digest instead of the key", []string{"Bearer " + strings.TrimPrefix(keys.Hash("bob", bobKey), "bob:sha256:")}},
		{"a prefix of a key", []string{"Bearer " + aliceKey[:len(aliceKey)-1]}},
		{"two Authorization headers", []string{"Bearer " + aliceKey, "Bearer " + bobKey}},
	}
	for _, route := range routes {
		for _, tt := range rejected {
			t.Run(route.method+" "+route.path+"/"+tt.name, func(t *testing.T) {
				resp, body := send(t, route.method, gw.URL+route.path, tt.auth...)
				if resp.StatusCode != http.StatusUnauthorized {
					t.Fatalf("status %d, want 401", resp.StatusCode)
				}
				checkOpenAIError(t, body, "invalid_api_key")
			})
		}
	}
	if n := gw.upstream.n.Load(); n != 0 {
		t.Fatalf("the upstream received %d requests without a valid gateway key", n)
	}

	accepted := []struct{ name, auth string }{
		{"plain-text key", "Bearer " + aliceKey},
		{"key stored as its digest", "Bearer " + bobKey},
		{"scheme in lower case", "bearer " + aliceKey},
	}
	for _, route := range routes {
		for _, tt := range accepted {
			t.Run(route.method+" "+route.path+"/"+tt.name, func(t *testing.T) {
				resp, _ := send(t, route.method, gw.URL+route.path, tt.auth)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d, want 200", resp.StatusCode)
				}
				got := gw.upstream.last(t)
				if a := got.Header.Values("Authorization"); len(a) != 1 || a[0] != "Bearer "+upstreamKey {
					t.Errorf("upstream Authorization %q, want the upstream key", a)
				}
				for name, values := range got.Header {
					for _, v := range values {
						if strings.Contains(v, aliceKey) || strings.Contains(v, bobKey) {
							t.Errorf("the upstream received a gateway key in %s", name)
						}
					}
				}
			})
		}
	}

	// focusgate's own endpoints keep their access rules: open, as before.
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if resp, _ := send(t, http.MethodGet, gw.URL+path); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s without a key: %d, want 200", path, resp.StatusCode)
		}
	}
}

// An upstream that needs no key (a local model server) gets no
// Authorization at all: the gateway key stays in the gateway.
func TestGatewayKeyNeverReachesAKeylessUpstream(t *testing.T) {
	f, _ := openKeys(t, teamKeys)
	gw := newKeyedGateway(t, f, func(o *gatewayOptions) { o.UpstreamAPIKey = "" })
	if resp, _ := send(t, http.MethodGet, gw.URL+"/v1/models", "Bearer "+aliceKey); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if a := gw.upstream.last(t).Header.Values("Authorization"); len(a) != 0 {
		t.Errorf("upstream Authorization %q, want none", a)
	}
}

// A key removed from the file is rejected once the file is reloaded, by a
// change of the file or by SIGHUP, while the gateway keeps serving; a bad
// file keeps the keys in use.
func TestRevokedKeyIsRejectedAfterReload(t *testing.T) {
	for _, via := range []string{"file change", "SIGHUP"} {
		t.Run(via, func(t *testing.T) {
			f, path := openKeys(t, teamKeys)
			gw := newKeyedGateway(t, f)
			reloads := make(chan error, 16)
			f.Notify(func(set *keys.Set, err error) {
				if err == nil {
					gw.srv.KeysChanged(set.Names())
				}
				reloads <- err
			})
			interval, hup := time.Hour, make(chan os.Signal, 1)
			if via == "file change" {
				interval = 5 * time.Millisecond
			}
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			go f.Watch(ctx, interval, hup)
			reload := func(content string) error {
				t.Helper()
				writeKeys(t, path, content)
				if via == "SIGHUP" {
					hup <- syscall.SIGHUP
				}
				select {
				case err := <-reloads:
					return err
				case <-time.After(10 * time.Second):
					t.Fatal("the keys file was not reloaded")
					return nil
				}
			}

			if resp, _ := send(t, http.MethodGet, gw.URL+"/v1/models", "Bearer "+bobKey); resp.StatusCode != http.StatusOK {
				t.Fatalf("bob before revocation: %d", resp.StatusCode)
			}
			if err := reload("alice:" + aliceKey + "\n"); err != nil {
				t.Fatalf("reload: %v", err)
			}
			before := gw.upstream.n.Load()
			resp, body := send(t, http.MethodGet, gw.URL+"/v1/models", "Bearer "+bobKey)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("bob after revocation: %d, want 401", resp.StatusCode)
			}
			checkOpenAIError(t, body, "invalid_api_key")
			if n := gw.upstream.n.Load(); n != before {
				t.Errorf("a revoked key's request reached the upstream")
			}
			if resp, _ := send(t, http.MethodGet, gw.URL+"/v1/models", "Bearer "+aliceKey); resp.StatusCode != http.StatusOK {
				t.Errorf("alice after the reload: %d, want 200", resp.StatusCode)
			}

			// A broken file is reported and changes nothing.
			if err := reload("alice " + aliceKey + "\nbob:short\n"); err == nil {
				t.Fatal("a broken keys file reloaded without error")
			}
			if resp, _ := send(t, http.MethodGet, gw.URL+"/v1/models", "Bearer "+aliceKey); resp.StatusCode != http.StatusOK {
				t.Errorf("alice after a broken file: %d, want 200 (the keys in use stay)", resp.StatusCode)
			}
		})
	}
}

// Requests from two named keys are counted apart: requests, tokens before
// and after pruning, dollars saved and spent. A rejected request is
// anonymous, and a removed key's series disappear.
func TestMetricsPerKey(t *testing.T) {
	rt := newRetriever(t, keep("[a237] combobox", "[a203] textbox"))
	pruner := prune.New(prune.Config{RetrieverModel: "gpt-4.1-mini", MinTokens: 1000, UseHistory: true},
		mustRetriever(prune.RetrieverConfig{Speaks: focusgate.APIChat, BaseURL: rt.URL, Model: "gpt-4.1-mini", Timeout: 10 * time.Second}),
		cache.New(cache.NewMemory(1<<20, time.Hour), nil))
	f, _ := openKeys(t, teamKeys)
	gw := newKeyedGateway(t, f, func(o *gatewayOptions) {
		o.Pruner, o.Mode, o.Variant, o.RetrieverModel = pruner, focusgate.ModeRemove, focusgate.VariantLine, "gpt-4.1-mini"
	})

	laptop := readFile(t, laptopRequest)
	saved := map[string]int{}
	for _, tt := range []struct{ who, key, cache string }{
		{"alice", aliceKey, "miss"}, // alice pays for the retriever call
		{"bob", bobKey, "hit"},
		{"bob", bobKey, "hit"},
	} {
		resp := post(t, gw.URL+"/v1/chat/completions", laptop, map[string]string{"Authorization": "Bearer " + tt.key})
		if got := resp.Header.Get(proxy.HeaderStatus); got != "pruned" || resp.Header.Get(proxy.HeaderCache) != tt.cache {
			t.Fatalf("%s: status %q cache %q, want pruned, %s", tt.who, got, resp.Header.Get(proxy.HeaderCache), tt.cache)
		}
		b, _ := strconv.Atoi(resp.Header.Get(proxy.HeaderTokensBefore))
		a, _ := strconv.Atoi(resp.Header.Get(proxy.HeaderTokensAfter))
		saved[tt.who] += b - a
	}
	send(t, http.MethodGet, gw.URL+"/v1/models", "Bearer fg-mallory-0123456789abcdef")
	gw.logs.WaitUntil(t, "four access-log lines", func(logs string) bool { return strings.Count(logs, "msg=request") >= 4 })

	m := scrape(t, &gateway{URL: gw.URL})
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"focusgate_requests_total", map[string]string{"route": "chat", "code": "200", "key": "alice"}, 1},
		{"focusgate_requests_total", map[string]string{"route": "chat", "code": "200", "key": "bob"}, 2},
		{"focusgate_requests_total", map[string]string{"route": "passthrough", "code": "401", "key": "anonymous"}, 1},
		{"focusgate_prune_outcomes_total", map[string]string{"status": "pruned", "key": "alice"}, 1},
		{"focusgate_prune_outcomes_total", map[string]string{"status": "pruned", "key": "bob"}, 2},
	} {
		if got := value(m, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for _, who := range []string{"alice", "bob"} {
		k := map[string]string{"key": who}
		before := value(m, "focusgate_observation_tokens_before_total", k)
		after := value(m, "focusgate_observation_tokens_after_total", k)
		if int(before-after) != saved[who] || saved[who] <= 0 {
			t.Errorf("%s: tokens saved %v, want the headers' %d", who, before-after, saved[who])
		}
		// gpt-4.1 reads at $2 per million input tokens.
		if got, want := value(m, "focusgate_action_input_saved_usd_total", k), float64(saved[who])*2/1e6; math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: saved %v USD, want %v", who, got, want)
		}
	}
	// Only alice's request called the retriever: $0.40 in, $1.60 out per million.
	if got, want := value(m, "focusgate_retriever_cost_usd_total", map[string]string{"key": "alice"}), (3000*0.4+80*1.6)/1e6; math.Abs(got-want) > 1e-9 {
		t.Errorf("alice's retriever cost %v, want %v", got, want)
	}
	if got := value(m, "focusgate_retriever_cost_usd_total", map[string]string{"key": "bob"}); got != 0 {
		t.Errorf("bob's retriever cost %v, want 0 (cache hits)", got)
	}
	if got, want := value(m, "focusgate_saved_usd", map[string]string{"key": "bob"}), float64(saved["bob"])*2/1e6; math.Abs(got-want) > 1e-9 {
		t.Errorf("bob's net savings %v, want %v", got, want)
	}

	// Removing bob removes his series: the label's values stay bounded by
	// the keys configured now.
	gw.srv.KeysChanged([]string{"alice"})
	m = scrape(t, &gateway{URL: gw.URL})
	for name, f := range m {
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "key" && l.GetValue() != "alice" && l.GetValue() != "anonymous" {
					t.Errorf("%s still has a series for key %q", name, l.GetValue())
				}
			}
		}
	}
	// Key names, never keys, in the logs.
	logs := gw.logs.String()
	if !strings.Contains(logs, "key=alice") || !strings.Contains(logs, "key=bob") || !strings.Contains(logs, "key=anonymous") {
		t.Errorf("the log lines do not name the keys:\n%s", logs)
	}
	if strings.Contains(logs, aliceKey) || strings.Contains(logs, bobKey) || strings.Contains(logs, upstreamKey) {
		t.Errorf("a key is in the logs")
	}
}

// rawExchange sends request bytes on a new connection and reads one
// response.
func rawExchange(t *testing.T, gwURL, request string) (*http.Response, []byte) {
	resp, body, _ := rawExchangeConn(t, gwURL, request)
	return resp, body
}

// rawExchangeConn is rawExchange that also returns the connection's reader,
// positioned after the response, to see whether the server hangs up.
func rawExchangeConn(t *testing.T, gwURL, request string) (*http.Response, []byte, *rawConn) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(gwURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// The request is written while the response is read: a server that
	// rejects a long request answers before reading all of it.
	go io.WriteString(conn, request)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, body, &rawConn{conn, br}
}

type rawConn struct {
	net.Conn
	br *bufio.Reader
}

// closed reports whether the server hangs up within d: reading then ends
// with EOF or a reset, not with the deadline.
func (c *rawConn) closed(d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := c.br.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func TestPathsCannotLeaveTheUpstreamBase(t *testing.T) {
	f, _ := openKeys(t, teamKeys)
	gw := newKeyedGateway(t, f)
	escapes := []string{
		"/v1/../../admin/secret",
		"/v1/%2e%2e/%2e%2e/admin/secret",
		"/v1/%2E%2E/admin",
		"/v1/..%2f..%2fadmin/secret",
		"/v1/..%2F..%2Fadmin",
		`/v1/..\..\admin\secret`,
		"/v1/..%5c..%5cadmin",
		"/v1/%252e%252e/%252e%252e/admin",
		"/v1/./models",
		"/v1/chat/completions/..",
		"/..",
	}
	for _, path := range escapes {
		t.Run(path, func(t *testing.T) {
			resp, body := rawExchange(t, gw.URL, "GET "+path+" HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer "+aliceKey+"\r\n\r\n")
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", resp.StatusCode)
			}
			checkOpenAIError(t, body, "invalid_path")
		})
	}
	if n := gw.upstream.n.Load(); n != 0 {
		t.Fatalf("%d requests with dot segments reached the upstream", n)
	}

	fine := map[string]string{
		"/v1/models":                          "/tenant-a/v1/models",
		"/v1/files/file-abc.jsonl/content":    "/tenant-a/v1/files/file-abc.jsonl/content",
		"/v1/models/ft:gpt-4.1:acme..v2":      "/tenant-a/v1/models/ft:gpt-4.1:acme..v2",
		"/v1/models/meta-llama%2FLlama-3-70B": "/tenant-a/v1/models/meta-llama/Llama-3-70B",
		"/v1/.well-known/x":                   "/tenant-a/v1/.well-known/x",
	}
	for path, want := range fine {
		resp, _ := rawExchange(t, gw.URL, "GET "+path+" HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer "+aliceKey+"\r\n\r\n")
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d, want 200", path, resp.StatusCode)
			continue
		}
		if got := gw.upstream.last(t).Path; got != want {
			t.Errorf("%s reached %s, want %s", path, got, want)
		}
	}
}

// X-Focusgate-* request trailers are stripped like X-Focusgate-* headers;
// other trailers pass.
func TestOwnTrailersNeverReachTheUpstream(t *testing.T) {
	trailers := make(chan http.Header, 1)
	gw := newGateway(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		trailers <- r.Trailer.Clone()
	})
	for _, path := range []string{"/v1/files", "/v1/chat/completions"} {
		body := `{"model":"gpt-4.1"}`
		resp, _ := rawExchange(t, gw.URL, "POST "+path+" HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n"+
			"Trailer: X-Focusgate-Mode, X-Client-Checksum\r\n\r\n"+
			fmt.Sprintf("%x\r\n%s\r\n0\r\nX-Focusgate-Mode: off\r\nX-Client-Checksum: abc\r\n\r\n", len(body), body))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", path, resp.StatusCode)
		}
		got := <-trailers
		for name := range got {
			if strings.HasPrefix(http.CanonicalHeaderKey(name), "X-Focusgate-") {
				t.Errorf("%s: the upstream received the trailer %s", path, name)
			}
		}
		if path == "/v1/files" {
			if _, ok := got["X-Client-Checksum"]; !ok {
				t.Errorf("%s: the client's own trailer was dropped: %v", path, got)
			}
		}
	}
}

// A request with both Content-Length and Transfer-Encoding is answered and
// the connection closed (RFC 9112 §6.1); net/http's own rejections answer
// in OpenAI's error shape.
func TestAmbiguousAndMalformedRequests(t *testing.T) {
	f, _ := openKeys(t, teamKeys)
	gw := newKeyedGateway(t, f)
	auth := "Authorization: Bearer " + aliceKey + "\r\n"

	// A hang-up shows within the generous deadline; a connection kept alive
	// is seen open for a second, which is all that test needs.
	const hangUp, keptAlive = 10 * time.Second, time.Second
	for _, tt := range []struct {
		name, request string
		wantClosed    bool
	}{
		{"Content-Length and Transfer-Encoding", "POST /v1/files HTTP/1.1\r\nHost: gw\r\n" + auth +
			"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", true},
		{"Transfer-Encoding and Content-Length in lower case", "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n" + auth +
			"transfer-encoding: chunked\r\ncontent-length: 4\r\n\r\n7\r\n{\"a\":1}\r\n0\r\n\r\n", true},
		// A header line may end as a request line does; it starts nothing.
		{"Content-Length, a line ending in HTTP/1.1, Transfer-Encoding", "POST /v1/files HTTP/1.1\r\nHost: gw\r\n" + auth +
			"Content-Length: 4\r\nX-Note: as in HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", true},
		{"Transfer-Encoding only", "POST /v1/files HTTP/1.1\r\nHost: gw\r\n" + auth + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", false},
		{"Content-Length only", "POST /v1/files HTTP/1.1\r\nHost: gw\r\n" + auth + "Content-Length: 5\r\n\r\nhello", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, _, conn := rawExchangeConn(t, gw.URL, tt.request)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200", resp.StatusCode)
			}
			if tt.wantClosed && !conn.closed(hangUp) {
				t.Error("the connection was kept open")
			}
			if !tt.wantClosed && conn.closed(keptAlive) {
				t.Error("the connection was closed")
			}
		})
	}
	// The second request of a kept-alive connection is watched as well,
	// whatever the first one's body held.
	lookalike := "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
	inChunk := "Content-Length: 300\r\n\r\n"
	for _, tt := range []struct {
		name, first string
		keptAlive   bool
	}{
		{"after a request without a body", "GET /v1/models HTTP/1.1\r\nHost: gw\r\n" + auth + "\r\n", true},
		// A body read by its length is passed over: lines in it that
		// look like both headers are not header lines.
		{"after a body of lines that look like both lengths", "POST /v1/files HTTP/1.1\r\nHost: gw\r\n" + auth +
			"Content-Length: " + strconv.Itoa(len(lookalike)) + "\r\n\r\n" + lookalike, true},
		// A length and a blank line in a chunk do not make the watcher
		// pass over the next request.
		{"after a chunk that holds a length and a blank line", "POST /v1/files HTTP/1.1\r\nHost: gw\r\n" + auth +
			"Transfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(inChunk), inChunk), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, _, conn := rawExchangeConn(t, gw.URL, tt.first)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("first request: status %d", resp.StatusCode)
			}
			if tt.keptAlive && conn.closed(keptAlive) {
				t.Fatal("the first request's connection was closed")
			}
			io.WriteString(conn, "POST /v1/files HTTP/1.1\r\nHost: gw\r\n"+auth+"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
			_ = conn.SetReadDeadline(time.Now().Add(hangUp))
			second, err := http.ReadResponse(conn.br, nil)
			if err != nil {
				t.Fatalf("second response: %v", err)
			}
			io.Copy(io.Discard, second.Body)
			second.Body.Close()
			if second.StatusCode != http.StatusOK || !conn.closed(hangUp) {
				t.Errorf("second request with both lengths: status %d, want 200 and the connection closed", second.StatusCode)
			}
		})
	}

	for _, tt := range []struct {
		name, request string
		status        int
		code          string
	}{
		{"conflicting Content-Length", "POST /v1/files HTTP/1.1\r\nHost: gw\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcd", 400, "bad_request"},
		{"unsupported Transfer-Encoding", "POST /v1/files HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, "unsupported_transfer_encoding"},
		{"no Host", "GET /v1/models HTTP/1.1\r\n\r\n", 400, "bad_request"},
		{"headers over the limit", "GET /v1/models HTTP/1.1\r\nHost: gw\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n", 431, "request_header_fields_too_large"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body, conn := rawExchangeConn(t, gw.URL, tt.request)
			if resp.StatusCode != tt.status || !conn.closed(hangUp) {
				t.Errorf("status %d, want %d and the connection closed", resp.StatusCode, tt.status)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			checkOpenAIError(t, body, tt.code)
		})
	}
	// The same errors on another API's request are in that API's shape, as
	// far as the request's first bytes tell its API.
	big := "X-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n"
	for _, tt := range []struct {
		name, request string
		status        int
		check         func(t *testing.T, body []byte)
	}{
		{"headers over the limit on /v1/messages", "POST /v1/messages?beta=true HTTP/1.1\r\nHost: gw\r\nContent-Length: 2\r\n" + big, 431,
			func(t *testing.T, body []byte) { checkAnthropicError(t, body, "invalid_request_error") }},
		{"headers over the limit with anthropic-version", "GET /v1/models HTTP/1.1\r\nHost: gw\r\nAnthropic-Version: 2023-06-01\r\n" + big, 431,
			func(t *testing.T, body []byte) { checkAnthropicError(t, body, "invalid_request_error") }},
		{"headers over the limit on Gemini", "POST /v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse HTTP/1.1\r\nHost: gw\r\n" + big, 431,
			func(t *testing.T, body []byte) { checkGoogleError(t, body, 431, "INVALID_ARGUMENT") }},
		{"conflicting Content-Length on Gemini", "POST /v1beta/models/gemini-2.5-flash:generateContent HTTP/1.1\r\nHost: gw\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcd", 400,
			func(t *testing.T, body []byte) { checkGoogleError(t, body, 400, "INVALID_ARGUMENT") }},
		{"a request after a kept-alive one on another API", "GET /v1beta/models HTTP/1.1\r\nHost: gw\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: gw\r\n" + big, 431,
			func(t *testing.T, body []byte) { checkOpenAIError(t, body, "request_header_fields_too_large") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body, conn := rawExchangeConn(t, gw.URL, tt.request)
			if strings.Count(tt.request, "HTTP/1.1") > 1 {
				// The first answer is the upstream's; the error follows.
				resp, err := http.ReadResponse(conn.br, nil)
				if err != nil {
					t.Fatal(err)
				}
				body, _ = io.ReadAll(resp.Body)
				if resp.StatusCode != tt.status {
					t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
				}
				tt.check(t, body)
				return
			}
			if resp.StatusCode != tt.status || !conn.closed(hangUp) {
				t.Errorf("status %d, want %d and the connection closed", resp.StatusCode, tt.status)
			}
			tt.check(t, body)
		})
	}
}

// A client's gateway key never reaches the pipeline as the client's own
// credential (which a retriever of the client's provider may be handed):
// the gateway takes it out before the body is inspected.
func TestPipelineNeverGetsTheGatewayKey(t *testing.T) {
	rw := &scripted{out: focusgate.Outcome{Status: focusgate.StatusSkipped, Reason: focusgate.ReasonNoObservation}}
	f, _ := openKeys(t, teamKeys)
	gw := newKeyedGateway(t, f, func(o *gatewayOptions) {
		o.UpstreamAPIKey = ""
		o.Pipeline = rw
	})
	for _, h := range []map[string]string{{"Authorization": "Bearer " + aliceKey}, {"X-Api-Key": bobKey}} {
		if resp := post(t, gw.URL+"/v1/chat/completions", []byte(`{"model":"gpt-4.1","messages":[]}`), h); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want the request let through", resp.StatusCode)
		}
	}
	reqs := rw.requests()
	if len(reqs) != 2 {
		t.Fatalf("the pipeline was handed %d requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		if strings.Contains(r.Credential.Value, aliceKey) || strings.Contains(r.Credential.Value, bobKey) {
			t.Errorf("the pipeline was handed the gateway key as the client's credential: %q", r.Credential.Value)
		}
	}
}

// A gateway key reaches the upstream through no channel: repeated in another
// header, a cookie, a query parameter or a second credential header, it is
// cut out, and the client's other headers, cookies and parameters arrive as
// they were sent. Bob's key is stored as its digest, so it is found by
// looking each word up, not by searching for known text.
func TestGatewayKeysNeverLeaveThroughAnotherChannel(t *testing.T) {
	f, _ := openKeys(t, teamKeys)
	gw := newKeyedGateway(t, f)
	for _, key := range []string{aliceKey, bobKey} {
		channels := []struct {
			name   string
			header map[string]string
			query  string
		}{
			{"x-api-key", map[string]string{"X-Api-Key": key}, ""},
			{"api-key", map[string]string{"Api-Key": key}, ""},
			{"OpenAI-Organization", map[string]string{"OpenAI-Organization": key}, ""},
			{"a cookie among others", map[string]string{"Cookie": "theme=dark; session=" + key + "; lang=en"}, ""},
			{"a custom header, quoted", map[string]string{"X-Upstream-Token": `token="` + key + `"`}, ""},
			{"query", nil, "api-version=2024-10-21&api-key=" + key + "&x=1"},
			{"query, escaped", nil, "api-key=" + url.QueryEscape(key+" ") + "&x=1"},
		}
		for _, ch := range channels {
			t.Run(ch.name, func(t *testing.T) {
				req, _ := http.NewRequest(http.MethodPost, gw.URL+"/v1/chat/completions?"+ch.query, strings.NewReader(`{"model":"gpt-4.1","messages":[]}`))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("X-Client-Trace", "abc-123")
				for k, v := range ch.header {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d", resp.StatusCode)
				}
				got := gw.upstream.last(t)
				for name, values := range got.Header {
					for _, v := range values {
						if strings.Contains(v, key) {
							t.Errorf("the gateway key reached the upstream in %s", name)
						}
					}
				}
				if strings.Contains(got.RawQuery, url.QueryEscape(key)) || strings.Contains(got.RawQuery, key) {
					t.Errorf("the gateway key reached the upstream in the query %q", got.RawQuery)
				}
				if got.Header.Get("X-Client-Trace") != "abc-123" {
					t.Error("another header was lost")
				}
				switch ch.name {
				case "a cookie among others":
					if c := got.Header.Get("Cookie"); c != "theme=dark; lang=en" {
						t.Errorf("Cookie %q, want the other cookies as sent", c)
					}
				case "query":
					if got.RawQuery != "api-version=2024-10-21&x=1" {
						t.Errorf("query %q, want the other parameters as sent", got.RawQuery)
					}
				}
			})
		}
	}
}
