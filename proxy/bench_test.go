package proxy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/pipeline"

	"github.com/focusgate/focusgate/bench/workload"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/proxy"
	"github.com/focusgate/focusgate/prune"
)

const (
	benchRequestFile = "../testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json"
	benchTreeFile    = "../testdata/axtrees/bgym-pr301_web_amazon_macbook.txt"
	benchTreeTokens  = 80000 // the cache hit's page
	benchMissTokens  = 60000 // the cache miss's page
)

// BenchmarkPassthrough measures one small chat request with nothing to
// prune over loopback HTTP: straight to the upstream, through a bare
// httputil.ReverseProxy and through focusgate. What a proxy adds is its time
// minus direct's.
func BenchmarkPassthrough(b *testing.B) {
	body := workload.Chat(false)
	passthrough(b, func(uint64) []byte { return body })
}

// BenchmarkPassthroughNoPage is BenchmarkPassthrough with 16 KB requests
// that hold no page but hundreds of markdown list items and links that look
// like element ids at first sight (workload.NoPage): what detection costs on
// text it must reject. Each request is a new one, as a chat's newest message
// is, so focusgate's memory of the texts it has searched does not spare it
// the search.
func BenchmarkPassthroughNoPage(b *testing.B) {
	notes, err := os.ReadFile(filepath.Join("..", workload.NotesFile))
	if err != nil {
		b.Fatal(err)
	}
	passthrough(b, workload.NoPage(string(notes)))
}

// BenchmarkPassthroughProse is BenchmarkPassthroughNoPage with 16 KB of
// prose (workload.Prose): the other ordinary chat body, with nothing that
// looks like a page at all.
func BenchmarkPassthroughProse(b *testing.B) {
	passthrough(b, workload.Prose())
}

// benchUpstream is an upstream that reads each request whole and answers
// workload.Completion, as the load benchmark's does.
func benchUpstream(b *testing.B) (*httptest.Server, *url.URL) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, workload.Completion)
	}))
	b.Cleanup(upstream.Close)
	target, err := url.Parse(upstream.URL)
	if err != nil {
		b.Fatal(err)
	}
	return upstream, target
}

func passthrough(b *testing.B, body func(n uint64) []byte) {
	upstream, target := benchUpstream(b)
	base, err := url.Parse(upstream.URL + "/v1")
	if err != nil {
		b.Fatal(err)
	}

	// The floor: the standard library's reverse proxy with its defaults.
	std := httptest.NewServer(httputil.NewSingleHostReverseProxy(target))
	b.Cleanup(std.Close)
	bare := httptest.NewServer(workload.BareProxy(target))
	b.Cleanup(bare.Close)

	gw, _ := gatewayOptions{
		upstreamOptions: upstreamOptions{Upstream: base},
		// Never consulted: the body has no observation. It is set so that
		// focusgate reads and inspects the body, as in production.
		pipelineOptions: pipeline.Options{Pruner: benchPruner(nil), Finder: benchFinder(), Mode: focusgate.ModeRemove, Variant: focusgate.VariantLine},
	}.build()
	gateway := httptest.NewServer(gw)
	b.Cleanup(gateway.Close)

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	b.Cleanup(client.CloseIdleConnections)
	for _, tc := range []struct {
		name, url, status string
	}{
		{"direct", upstream.URL, ""},
		{"default-proxy", std.URL, ""},
		{"reverse-proxy", bare.URL, ""},
		{"focusgate", gateway.URL, "skipped; reason=no-observation"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := startCPU(b)
			for n := uint64(0); b.Loop(); n++ {
				if err := benchPost(client, tc.url+"/v1/chat/completions", body(n), tc.status); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report()
		})
	}
}

// BenchmarkCacheHitHotPath measures what focusgate spends on a request with an
// 80k-token page whose selection is already cached: reading the body,
// detection, the cache look-up, token counting, post-processing and the
// splice, and handing the body to the transport. There is no network: the
// handler is called directly and the upstream is a canned response, so the
// time is the gateway's CPU. Each mode reuses the one cached selection, as a
// request that switches modes does.
func BenchmarkCacheHitHotPath(b *testing.B) {
	tree, err := workload.NewTree(benchRequestFile, benchTreeFile, benchTreeTokens)
	if err != nil {
		b.Fatal(err)
	}
	gw, _ := gatewayOptions{
		upstreamOptions: upstreamOptions{Upstream: &url.URL{Scheme: "http", Host: "upstream.invalid", Path: "/v1"}}, proxyOptions: proxy.Options{Transport: cannedTransport{}},
		pipelineOptions: pipeline.Options{Pruner: benchPruner(workload.Keep(tree.Lines)), Finder: benchFinder(), Mode: focusgate.ModeRemove, Variant: focusgate.VariantLine},
	}.build()
	serve := func(mode focusgate.Mode) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(tree.Body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-bench")
		req.Header.Set(proxy.HeaderMode, string(mode))
		rec := benchRecorder{httptest.NewRecorder()}
		gw.ServeHTTP(rec, req)
		return rec.ResponseRecorder
	}
	// The first request asks the retriever and fills the cache.
	if got := serve(focusgate.ModeRemove).Header().Get(proxy.HeaderCache); got != string(focusgate.CacheMiss) {
		b.Fatalf("first request: %s = %q, want %q", proxy.HeaderCache, got, focusgate.CacheMiss)
	}

	for _, mode := range []focusgate.Mode{focusgate.ModeRemove, focusgate.ModeAncestors, focusgate.ModeStubs} {
		b.Run(string(mode), func(b *testing.B) {
			rec := serve(mode)
			if err := checkHit(rec, tree.Tokens); err != nil {
				b.Fatal(err)
			}
			b.Logf("%d-byte request, observation of %d lines pruned from %d to %s tokens",
				len(tree.Body), tree.Lines, tree.Tokens, rec.Header().Get(proxy.HeaderTokensAfter))
			b.ReportAllocs()
			cpu := startCPU(b)
			for b.Loop() {
				if err := checkHit(serve(mode), tree.Tokens); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report()
		})
	}
}

// BenchmarkCacheHitOverHTTP sends the request of BenchmarkCacheHitHotPath
// over loopback HTTP, one at a time, straight to the upstream, through the
// standard library's reverse proxy with its defaults and through focusgate,
// whose cached selection prunes it: everything a cache hit costs, both hops
// included, against what forwarding the whole body costs the bare proxy.
// Client, upstream and proxies share the process, so a proxy's own CPU is
// its figure minus direct's.
func BenchmarkCacheHitOverHTTP(b *testing.B) {
	tree, err := workload.NewTree(benchRequestFile, benchTreeFile, benchTreeTokens)
	if err != nil {
		b.Fatal(err)
	}
	upstream, target := benchUpstream(b)
	std := httptest.NewServer(httputil.NewSingleHostReverseProxy(target))
	b.Cleanup(std.Close)
	gw, _ := gatewayOptions{
		upstreamOptions: upstreamOptions{Upstream: target.JoinPath("v1")},
		pipelineOptions: pipeline.Options{Pruner: benchPruner(workload.Keep(tree.Lines)), Finder: benchFinder(), Mode: focusgate.ModeRemove, Variant: focusgate.VariantLine},
	}.build()
	gateway := httptest.NewServer(gw)
	b.Cleanup(gateway.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	b.Cleanup(client.CloseIdleConnections)
	// The first request asks the retriever and fills the cache.
	if err := benchPost(client, gateway.URL+"/v1/chat/completions", tree.Body, string(focusgate.StatusPruned)); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, url, status string }{
		{"direct", upstream.URL, ""},
		{"default-proxy", std.URL, ""},
		{"focusgate", gateway.URL, string(focusgate.StatusPruned)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := startCPU(b)
			for b.Loop() {
				if err := benchPost(client, tc.url+"/v1/chat/completions", tree.Body, tc.status); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report()
		})
	}
}

// BenchmarkMissHotPath measures what focusgate spends on a request with a
// 60k-token page it has not seen whole, beyond the retriever's answer (which
// comes at once): each request's page differs from the one before in its
// first line (workload.Tree.Steps), as consecutive snapshots of a page do,
// so that detection, the page's hash, the selection (a cache miss), the
// retriever's prompt, pruning and the splice are all done anew, while the
// tokens of every line but one were counted before.
func BenchmarkMissHotPath(b *testing.B) {
	tree, err := workload.NewTree(benchRequestFile, benchTreeFile, benchMissTokens)
	if err != nil {
		b.Fatal(err)
	}
	gw, _ := gatewayOptions{
		upstreamOptions: upstreamOptions{Upstream: &url.URL{Scheme: "http", Host: "upstream.invalid", Path: "/v1"}},
		proxyOptions:    proxy.Options{Transport: cannedTransport{}},
		pipelineOptions: pipeline.Options{Pruner: benchPruner(workload.Keep(tree.Lines)), Finder: benchFinder(), Mode: focusgate.ModeRemove, Variant: focusgate.VariantLine},
	}.build()
	steps := tree.Steps()
	serve := func(n uint64) error {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(steps(n)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-bench")
		rec := benchRecorder{httptest.NewRecorder()}
		gw.ServeHTTP(rec, req)
		h := rec.Header()
		if rec.Code != http.StatusOK || h.Get(proxy.HeaderStatus) != string(focusgate.StatusPruned) || h.Get(proxy.HeaderCache) != string(focusgate.CacheMiss) {
			return fmt.Errorf("not a pruned cache miss: status %d, %q, cache %q", rec.Code, h.Get(proxy.HeaderStatus), h.Get(proxy.HeaderCache))
		}
		return nil
	}
	// The first step counts the tokens of every line.
	if err := serve(0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := startCPU(b)
	for n := uint64(1); b.Loop(); n++ {
		if err := serve(n); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report()
}

// BenchmarkConversation replays a recorded Playwright MCP conversation, 11
// requests each carrying every page before it, through focusgate's handler,
// its selections already cached: the CPU one whole conversation costs, with
// the page memory (as the gateway runs) and without it (no Finder, no memo of
// page hashes; token counts are remembered in both).
func BenchmarkConversation(b *testing.B) {
	files, err := filepath.Glob("../testdata/agents/playwright-mcp/chat/*.json")
	if err != nil || len(files) == 0 {
		b.Fatalf("no recorded conversation: %v", err)
	}
	slices.Sort(files)
	var bodies [][]byte
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		bodies = append(bodies, body)
	}
	for _, tc := range []struct {
		name    string
		finder  *detect.Finder
		keyMemo int
	}{
		{"page-memory", benchFinder(), 16 << 20},
		{"none", nil, 0},
	} {
		b.Run(tc.name, func(b *testing.B) {
			pruner := prune.New(prune.Config{
				RetrieverModel:   "gpt-4.1-mini",
				MinTokens:        1000,
				UseHistory:       true,
				Counter:          prune.NewCounter(16 << 20),
				PageKeyMemoBytes: tc.keyMemo,
				AppliedMemoBytes: tc.keyMemo,
			}, keepRetriever{}, cache.New(cache.NewMemory(64<<20, 24*time.Hour), nil))
			gw, _ := gatewayOptions{
				upstreamOptions: upstreamOptions{Upstream: &url.URL{Scheme: "http", Host: "upstream.invalid", Path: "/v1"}}, proxyOptions: proxy.Options{Transport: cannedTransport{}},
				pipelineOptions: pipeline.Options{Pruner: pruner, Finder: tc.finder, Mode: focusgate.ModeRemove, Variant: focusgate.VariantLine},
			}.build()
			replay := func() (pruned int) {
				for _, body := range bodies {
					req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					rec := benchRecorder{httptest.NewRecorder()}
					gw.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("status %d: %s", rec.Code, rec.Body)
					}
					if rec.Header().Get(proxy.HeaderStatus) == string(focusgate.StatusPruned) {
						pruned++
					}
				}
				return pruned
			}
			replay() // asks the retriever about each request's newest page
			if n := replay(); n < len(bodies)/2 {
				b.Fatalf("only %d of %d requests pruned", n, len(bodies))
			}
			b.ReportAllocs()
			cpu := startCPU(b)
			for b.Loop() {
				replay()
			}
			cpu.report()
		})
	}
}

// keepRetriever keeps the lines workload.Keep keeps, whatever the page.
type keepRetriever struct{}

func (keepRetriever) Select(_ context.Context, q prune.Query) (prune.Selection, error) {
	return prune.Selection{Ranges: workload.Keep(q.Lines)}, nil
}

// cpuClock reports the CPU time the whole process spent per iteration
// (cpu-ns/op): every thread, garbage collection included, which on a shared
// machine varies much less than the time per iteration does. For
// BenchmarkPassthrough it includes the client and the upstream, so what a
// proxy adds is its figure minus direct's.
type cpuClock struct {
	b     *testing.B
	start time.Duration
}

func startCPU(b *testing.B) cpuClock { return cpuClock{b, processCPU(b)} }

func (c cpuClock) report() {
	if c.b.N > 0 {
		c.b.ReportMetric(float64(processCPU(c.b)-c.start)/float64(c.b.N), "cpu-ns/op")
	}
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// checkHit makes sure a benchmark measures what it claims: a pruned request
// served from the cache.
func checkHit(rec *httptest.ResponseRecorder, tokens int) error {
	h := rec.Header()
	switch {
	case rec.Code != http.StatusOK:
		return fmt.Errorf("status %d: %s", rec.Code, rec.Body)
	case h.Get(proxy.HeaderStatus) != string(focusgate.StatusPruned) || h.Get(proxy.HeaderCache) != string(focusgate.CacheHit):
		return fmt.Errorf("not a pruned cache hit: status %q, cache %q", h.Get(proxy.HeaderStatus), h.Get(proxy.HeaderCache))
	case h.Get(proxy.HeaderTokensBefore) != strconv.Itoa(tokens):
		return fmt.Errorf("%s = %s, want %d", proxy.HeaderTokensBefore, h.Get(proxy.HeaderTokensBefore), tokens)
	}
	return nil
}

// benchRecorder is a ResponseRecorder that also has CloseNotify, which gin's
// writer asks of the writer it wraps when ReverseProxy calls it; a real
// server's writer has it. This client never goes away.
type benchRecorder struct{ *httptest.ResponseRecorder }

func (benchRecorder) CloseNotify() <-chan bool { return nil }

// benchPruner is the pruner cmd/focusgate builds, over an in-process cache
// and a retriever that answers ranges at once, with the default
// FOCUSGATE_PAGE_MEMO_BYTES (64 MiB): a quarter for token counts, a quarter
// for page hashes; the other half is benchFinder's.
func benchPruner(ranges []focusgate.Range) *prune.Pruner {
	return prune.New(prune.Config{
		RetrieverModel:   "gpt-4.1-mini",
		MinTokens:        1000,
		UseHistory:       true,
		Counter:          prune.NewCounter(16 << 20),
		PageKeyMemoBytes: 8 << 20,
		AppliedMemoBytes: 8 << 20,
	}, benchRetriever(ranges), cache.New(cache.NewMemory(64<<20, 24*time.Hour), nil))
}

func benchFinder() *detect.Finder { return detect.NewFinder(32 << 20) }

type benchRetriever []focusgate.Range

func (r benchRetriever) Select(context.Context, prune.Query) (prune.Selection, error) {
	if r == nil {
		return prune.Selection{}, errors.New("benchmark retriever: not expected to be called")
	}
	return prune.Selection{Ranges: r}, nil
}

// cannedTransport answers every request with workload.Completion after
// reading the request body, as a transport writing it to the network would.
type cannedTransport struct{}

func (cannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, err := io.Copy(io.Discard, r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	return &http.Response{
		StatusCode:    http.StatusOK,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(strings.NewReader(workload.Completion)),
		ContentLength: int64(len(workload.Completion)),
		Request:       r,
	}, nil
}

// benchPost sends body and reads the whole answer, which must be the
// upstream's completion; wantStatus, when set, is the X-Focusgate-Status the
// response must carry.
func benchPost(client *http.Client, url string, body []byte, wantStatus string) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-bench")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	switch {
	case err != nil:
		return err
	case resp.StatusCode != http.StatusOK || n != int64(len(workload.Completion)):
		return fmt.Errorf("unexpected answer: %s, %d bytes", resp.Status, n)
	case resp.Header.Get(proxy.HeaderStatus) != wantStatus:
		return fmt.Errorf("%s = %q, want %q", proxy.HeaderStatus, resp.Header.Get(proxy.HeaderStatus), wantStatus)
	}
	return nil
}
