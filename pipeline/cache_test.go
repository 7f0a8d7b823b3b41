package pipeline_test

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/cache/cachetest"
	"github.com/focusgate/focusgate/internal/redistest"
	"github.com/focusgate/focusgate/pipeline"
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

// replica is one gateway's pipeline with its own pruner and cache over
// store.
func replica(rt *retriever, model string, store cache.Store) (*pipeline.Pipeline, *countingPruner) {
	p := &countingPruner{Pruner: retrieverPruner(rt, model, store), changed: make(chan struct{}, 1)}
	return retrieverPipeline(p), p
}

func TestSecondIdenticalRequestIsACacheHit(t *testing.T) {
	rt := newRetriever(t, keep("[a237] combobox"))
	p, _ := replica(rt, "m", cache.NewMemory(1<<20, time.Hour))
	body := readFile(t, laptopRequest)

	var sent [][]byte
	for _, want := range []focusgate.CacheOutcome{focusgate.CacheMiss, focusgate.CacheHit} {
		got, out := rewrite(p, chat(body))
		if out.Cache != want {
			t.Errorf("cache %q, want %q", out.Cache, want)
		}
		sent = append(sent, got)
	}
	if n := len(rt.Calls()); n != 1 {
		t.Errorf("retriever called %d times, want 1", n)
	}
	if !bytes.Equal(sent[0], sent[1]) {
		t.Error("the cached selection gave different bytes from the first")
	}
}

// twentyAtOnce sends 20 identical requests, spread over the pipelines, while
// the retriever holds its answer until all of them are being pruned. It
// returns how many requests had each cache outcome. len(ps) must divide 20.
func twentyAtOnce(t *testing.T, body []byte, ps []*pipeline.Pipeline, pruners []*countingPruner, release chan struct{}) map[focusgate.CacheOutcome]int {
	t.Helper()
	const n = 20
	outcomes := make([]focusgate.CacheOutcome, n)
	var wg sync.WaitGroup
	for i := range n {
		p := ps[i%len(ps)]
		wg.Go(func() {
			_, out := rewrite(p, chat(body))
			if out.Status != focusgate.StatusPruned {
				t.Errorf("request %d: %s %s", i, out.Status, out.Reason)
			}
			outcomes[i] = out.Cache
		})
	}
	for _, p := range pruners {
		p.waitEntered(t, int32(n/len(pruners)))
	}
	close(release)
	wg.Wait()
	count := map[focusgate.CacheOutcome]int{}
	for _, o := range outcomes {
		count[o]++
	}
	return count
}

func TestConcurrentIdenticalRequestsCallTheRetrieverOnce(t *testing.T) {
	body := readFile(t, laptopRequest)
	held := func(release <-chan struct{}) answerFunc {
		return func(lines []string) (int, string) {
			<-release
			return keep("[a237] combobox")(lines)
		}
	}

	t.Run("one process", func(t *testing.T) {
		release := make(chan struct{})
		rt := newRetriever(t, held(release))
		p, pr := replica(rt, "m", cache.NewMemory(1<<20, time.Hour))
		got := twentyAtOnce(t, body, []*pipeline.Pipeline{p}, []*countingPruner{pr}, release)
		if n := len(rt.Calls()); n != 1 {
			t.Errorf("retriever called %d times, want 1", n)
		}
		if got[focusgate.CacheMiss] != 1 || got[focusgate.CacheShared]+got[focusgate.CacheHit] != 19 {
			t.Errorf("cache outcomes %v, want one miss and 19 shared or hits", got)
		}
	})

	t.Run("two replicas sharing Redis", func(t *testing.T) {
		url := redistest.Shared(t)
		release := make(chan struct{})
		rt := newRetriever(t, held(release))
		model := "model-for-" + t.Name() + time.Now().Format(time.RFC3339Nano) // keys of its own on a shared server
		a, pa := replica(rt, model, cachetest.NewStore(t, url))
		b, pb := replica(rt, model, cachetest.NewStore(t, url))
		got := twentyAtOnce(t, body, []*pipeline.Pipeline{a, b}, []*countingPruner{pa, pb}, release)
		if n := len(rt.Calls()); n != 1 {
			t.Errorf("retriever called %d times across two replicas, want 1", n)
		}
		if got[focusgate.CacheMiss] != 1 || got[focusgate.CacheShared]+got[focusgate.CacheHit] != 19 {
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
	p, _ := replica(rt, "m", store)
	body := readFile(t, laptopRequest)
	send := func(want focusgate.CacheOutcome) {
		t.Helper()
		if _, out := rewrite(p, chat(body)); out.Status != focusgate.StatusPruned || out.Cache != want {
			t.Errorf("%s %s, cache %q; want pruned, cache %q", out.Status, out.Reason, out.Cache, want)
		}
	}
	send(focusgate.CacheMiss)
	send(focusgate.CacheHit)

	srv.Stop()
	for range 5 {
		send(focusgate.CacheMiss) // computed without Redis, still pruned
	}
	if store.Status() == nil {
		t.Error("Redis is reported up while it is stopped")
	}

	srv.Restart()
	waitUntil(t, func() bool { return store.Status() == nil }, "Redis to be seen up again")
	send(focusgate.CacheMiss) // the restarted server is empty
	send(focusgate.CacheHit)
}
