package proxy_test

import (
	"bytes"
	"context"
	"github.com/focusgate/focusgate/pipeline"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/cache/cachetest"
	"github.com/focusgate/focusgate/internal/redistest"
	"github.com/focusgate/focusgate/proxy"
	"github.com/focusgate/focusgate/prune"
)

// countingPruner counts the requests that have reached pruning, so that a
// test can hold the retriever until every concurrent request is in flight.
type countingPruner struct {
	pipeline.Pruner
	entered atomic.Int32
	changed chan struct{}
}

func (p *countingPruner) Prune(ctx context.Context, in prune.Input) prune.Result {
	p.entered.Add(1)
	select {
	case p.changed <- struct{}{}:
	default:
	}
	return p.Pruner.Prune(ctx, in)
}

// waitEntered blocks until n requests have reached pruning.
func (p *countingPruner) waitEntered(t *testing.T, n int32) {
	deadline := time.After(time.Minute)
	for p.entered.Load() < n {
		select {
		case <-p.changed:
		case <-deadline:
			t.Errorf("only %d of %d requests reached pruning", p.entered.Load(), n)
			return
		}
	}
}

// replica is one gateway with its own pruner and cache over store.
func replica(t *testing.T, rt *retriever, model string, store cache.Store) (*gateway, *countingPruner) {
	t.Helper()
	p := &countingPruner{changed: make(chan struct{}, 1)}
	p.Pruner = prune.New(prune.Config{RetrieverModel: model, MinTokens: 1000, UseHistory: true},
		prune.NewOpenAIRetriever(prune.RetrieverConfig{BaseURL: rt.URL, Model: model, Timeout: time.Hour}),
		cache.New(store, nil))
	return newGateway(t, nil, func(o *gatewayOptions) { o.Pruner = p }), p
}

func TestSecondIdenticalRequestIsACacheHit(t *testing.T) {
	rt := newRetriever(t, keep("[a237] combobox"))
	gw, _ := replica(t, rt, "m", cache.NewMemory(1<<20, time.Hour))
	body := readFile(t, laptopRequest)

	var sent [][]byte
	for _, want := range []string{"miss", "hit"} {
		resp := post(t, gw.URL+"/v1/chat/completions", body, nil)
		if got := resp.Header.Get(proxy.HeaderCache); got != want {
			t.Errorf("%s = %q, want %q", proxy.HeaderCache, got, want)
		}
		sent = append(sent, gw.upstream.last(t).Body)
	}
	if n := len(rt.calls()); n != 1 {
		t.Errorf("retriever called %d times, want 1", n)
	}
	if !bytes.Equal(sent[0], sent[1]) {
		t.Error("the cached selection gave different bytes from the first")
	}
}

// twentyAtOnce sends 20 identical requests, spread over the gateways, while
// the retriever holds its answer until all of them are being pruned. It
// returns the X-Focusgate-Cache values. len(gws) must divide 20.
func twentyAtOnce(t *testing.T, body []byte, gws []*gateway, pruners []*countingPruner, release chan struct{}) []string {
	t.Helper()
	const n = 20
	outcomes := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		gw := gws[i%len(gws)]
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, gw.URL+"/v1/chat/completions", bytes.NewReader(body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get(proxy.HeaderStatus) != "pruned" {
				t.Errorf("request %d: %d, %s", i, resp.StatusCode, resp.Header.Get(proxy.HeaderStatus))
			}
			outcomes[i] = resp.Header.Get(proxy.HeaderCache)
		})
	}
	for _, p := range pruners {
		p.waitEntered(t, int32(n/len(pruners)))
	}
	close(release)
	wg.Wait()
	return outcomes
}

func TestConcurrentIdenticalRequestsCallTheRetrieverOnce(t *testing.T) {
	body := readFile(t, laptopRequest)
	held := func(release <-chan struct{}) answerFunc {
		return func(lines []string) (int, string) {
			<-release
			return keep("[a237] combobox")(lines)
		}
	}
	count := func(outcomes []string) map[string]int {
		m := map[string]int{}
		for _, o := range outcomes {
			m[o]++
		}
		return m
	}

	t.Run("one process", func(t *testing.T) {
		release := make(chan struct{})
		rt := newRetriever(t, held(release))
		gw, p := replica(t, rt, "m", cache.NewMemory(1<<20, time.Hour))
		got := count(twentyAtOnce(t, body, []*gateway{gw}, []*countingPruner{p}, release))
		if n := len(rt.calls()); n != 1 {
			t.Errorf("retriever called %d times, want 1", n)
		}
		if got["miss"] != 1 || got["shared"]+got["hit"] != 19 {
			t.Errorf("cache outcomes %v, want one miss and 19 shared or hits", got)
		}
	})

	t.Run("two replicas sharing Redis", func(t *testing.T) {
		url := redistest.Shared(t)
		release := make(chan struct{})
		rt := newRetriever(t, held(release))
		model := "model-for-" + t.Name() + time.Now().Format(time.RFC3339Nano) // keys of its own on a shared server
		a, pa := replica(t, rt, model, cachetest.NewStore(t, url))
		b, pb := replica(t, rt, model, cachetest.NewStore(t, url))
		got := count(twentyAtOnce(t, body, []*gateway{a, b}, []*countingPruner{pa, pb}, release))
		if n := len(rt.calls()); n != 1 {
			t.Errorf("retriever called %d times across two replicas, want 1", n)
		}
		if got["miss"] != 1 || got["shared"]+got["hit"] != 19 {
			t.Errorf("cache outcomes %v, want one miss and 19 shared or hits", got)
		}
	})
}

// Redis dying in the middle of traffic costs the cache, never a request;
// once it is back, caching resumes.
func TestRedisOutageNeverFailsARequest(t *testing.T) {
	srv := redistest.Start(t)
	store := cachetest.NewStore(t, srv.URL())
	rt := newRetriever(t, keep("[a237] combobox"))
	gw, _ := replica(t, rt, "m", store)
	body := readFile(t, laptopRequest)
	send := func(wantCache string) {
		t.Helper()
		resp := post(t, gw.URL+"/v1/chat/completions", body, nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get(proxy.HeaderStatus) != "pruned" {
			t.Fatalf("got %d, %s", resp.StatusCode, resp.Header.Get(proxy.HeaderStatus))
		}
		if got := resp.Header.Get(proxy.HeaderCache); got != wantCache {
			t.Errorf("%s = %q, want %q", proxy.HeaderCache, got, wantCache)
		}
	}
	send("miss")
	send("hit")

	srv.Stop()
	for range 5 {
		send("miss") // computed without Redis, still pruned
	}
	if store.Status() == nil {
		t.Error("Redis is reported up while it is stopped")
	}

	srv.Restart()
	waitUntil(t, func() bool { return store.Status() == nil }, "Redis to be seen up again")
	send("miss") // the restarted server is empty
	send("hit")
}

// waitUntil polls cond, which reads state outside the test's control (the
// cache's background probe), until it holds or a deadline passes.
func waitUntil(t *testing.T, cond func() bool, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}
