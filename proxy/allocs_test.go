package proxy_test

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/bench/workload"
	"github.com/focusgate/focusgate/internal/allocs"
	"github.com/focusgate/focusgate/pipeline"
	"github.com/focusgate/focusgate/proxy"
)

var update = flag.Bool("update", false, "rewrite testdata/allocs.txt with the allocations measured")

// budgets are the handler's hot paths' allocations per request, as
// TestAllocationBudgets last measured them with -update.
var budgets = allocs.Budgets{Path: "testdata/allocs.txt", Of: "the gateway handler's", Pkg: "./proxy", Test: "TestAllocationBudgets"}

// allocsRequests is how many requests each hot path is measured over.
const allocsRequests = 30

// handlerPath is a request the gateway handles often, served whole by its
// handler.
type handlerPath struct {
	name   string
	body   func(n uint64) []byte
	status string                 // X-Focusgate-Status of each answer
	cache  focusgate.CacheOutcome // X-Focusgate-Cache of each answer, if any
	prime  bool                   // a first request fills the cache
}

// TestAllocationBudgets holds the requests the gateway handles most often,
// served whole by its HTTP handler, to the allocations and bytes per
// request committed in testdata/allocs.txt, with 20% of room (package
// internal/allocs). Where the pipeline's budgets (package pipeline) stop,
// these go on: routing, authentication, reading the body, forwarding it,
// the answer, and the bookkeeping after it, with a logger that formats
// every line. The upstream is a canned answer, so no network is counted.
// After a change that allocates more on purpose (or less), write the new
// figures with
//
//	go test ./proxy -run TestAllocationBudgets -update
//
// and say why in the commit. Under the race detector each path runs but is
// not measured; make test also runs this test without it.
func TestAllocationBudgets(t *testing.T) {
	notes, err := os.ReadFile(filepath.Join("..", workload.NotesFile))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := workload.NewTree(benchRequestFile, benchTreeFile, benchTreeTokens)
	if err != nil {
		t.Fatal(err)
	}
	chat := workload.Chat(false)
	noObservation := "skipped; reason=" + string(focusgate.ReasonNoObservation)
	paths := []handlerPath{
		{name: "passthrough/chat", body: func(uint64) []byte { return chat }, status: noObservation},
		{name: "passthrough/list-items", body: workload.NoPage(string(notes)), status: noObservation},
		{name: "passthrough/prose", body: workload.Prose(), status: noObservation},
		{name: "hit/80k", body: func(uint64) []byte { return tree.Body }, status: string(focusgate.StatusPruned), cache: focusgate.CacheHit, prime: true},
	}
	measured := map[string]allocs.PerRequest{}
	var names []string
	for _, hp := range paths {
		names = append(names, hp.name)
		s, _ := gatewayOptions{
			upstreamOptions: upstreamOptions{Upstream: &url.URL{Scheme: "http", Host: "upstream.invalid", Path: "/v1"}},
			proxyOptions: proxy.Options{
				Transport: cannedTransport{},
				Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
			},
			pipelineOptions: pipeline.Options{Pruner: benchPruner(workload.Keep(tree.Lines)), Finder: benchFinder(), Mode: focusgate.ModeRemove, Variant: focusgate.VariantLine},
		}.build()
		serve := func(req *http.Request, rec benchRecorder) error {
			s.ServeHTTP(rec, req)
			s.Flush()
			h := rec.Header()
			if rec.Code != http.StatusOK || h.Get(proxy.HeaderStatus) != hp.status || h.Get(proxy.HeaderCache) != string(hp.cache) {
				return fmt.Errorf("%s: answer %d, %s %q, %s %q; want 200, %q, %q",
					hp.name, rec.Code, proxy.HeaderStatus, h.Get(proxy.HeaderStatus), proxy.HeaderCache, h.Get(proxy.HeaderCache), hp.status, hp.cache)
			}
			return nil
		}
		if hp.prime {
			rec := benchRecorder{httptest.NewRecorder()}
			s.ServeHTTP(rec, handlerRequest(hp.body(0)))
			if got := rec.Header().Get(proxy.HeaderCache); got != string(focusgate.CacheMiss) {
				t.Fatalf("%s: first request: %s = %q, want %q", hp.name, proxy.HeaderCache, got, focusgate.CacheMiss)
			}
		}
		reqs := make([]*http.Request, 3+allocsRequests)
		recs := make([]benchRecorder, len(reqs))
		for i := range reqs {
			reqs[i], recs[i] = handlerRequest(hp.body(uint64(i))), benchRecorder{httptest.NewRecorder()}
		}
		if allocs.Race {
			for i := range 3 {
				if err := serve(reqs[i], recs[i]); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		failed := make([]error, len(reqs))
		measured[hp.name] = allocs.Measure(3, allocsRequests, func(i int) {
			failed[i] = serve(reqs[i], recs[i])
		})
		for _, err := range failed {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if allocs.Race {
		t.Log("the race detector allocates for itself: each hot path ran, the budgets are checked by the run without -race")
		return
	}
	budgets.Check(t, names, measured, *update)
}

// handlerRequest is a chat completion request with body, as an agent's SDK
// sends it.
func handlerRequest(body []byte) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-test")
	return req
}
