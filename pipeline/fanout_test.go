package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/bench/workload"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/cache/cachetest"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/internal/redistest"
	"github.com/focusgate/focusgate/pipeline"
	"github.com/focusgate/focusgate/prune"
)

// distinctPages are n copies of a page, each with a title of its own, so
// that no two share a selection.
func distinctPages(t *testing.T, n int) []string {
	page := readPage(t, "bgym-pr301_workarena_standard_laptop_form.txt")
	pages := make([]string, n)
	for i := range pages {
		pages[i] = strings.Replace(page, "RootWebArea '", fmt.Sprintf("RootWebArea 'Copy %d of ", i), 1)
	}
	return pages
}

// fanoutPipeline prunes with r, allowing maxCalls retriever calls a request.
func fanoutPipeline(r prune.Retriever, maxCalls int, gate *prune.Gate) *pipeline.Pipeline {
	opts := goldenOptions()
	opts.Pruner = prune.New(prune.Config{RetrieverModel: "gpt-4.1-mini", MinTokens: 1000, UseHistory: true, Gate: gate},
		r, cache.New(cache.NewMemory(64<<20, time.Hour), nil))
	opts.Finder = detect.NewFinder(16 << 20)
	opts.MaxCalls = maxCalls
	return pipeline.New(opts)
}

// One tool output that holds a hundred page snapshots makes no more
// retriever calls than a request may; the pages past the bound go out as
// they came, and the request is answered.
func TestAHundredPagesInOneOutputMakeBoundedCalls(t *testing.T) {
	r := &countingRetriever{}
	p := fanoutPipeline(r, 16, nil)
	output := strings.Join(distinctPages(t, 100), "\n\n--- next tab ---\n\n")
	body := workload.ToolLoop("gpt-4.1", [2]string{"snapshot", output})
	sent, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: body})
	if len(out.Pages) != 100 {
		t.Fatalf("%d pages found, want 100", len(out.Pages))
	}
	if n := r.calls.Load(); n != 16 {
		t.Errorf("%d retriever calls, want the bound, 16", n)
	}
	pruned, limited := 0, 0
	for _, pg := range out.Pages {
		switch {
		case pg.Status == focusgate.StatusPruned:
			pruned++
		case pg.Reason == focusgate.ReasonRetrieverLimit:
			limited++
			if pg.Original != pg.Forwarded {
				t.Error("a page past the bound was changed")
			}
		}
	}
	if pruned != 16 || limited != 84 {
		t.Errorf("%d pages pruned, %d past the bound; want 16 and 84", pruned, limited)
	}
	if out.Status != focusgate.StatusPruned || len(sent) >= len(body) {
		t.Errorf("request %s %s, %d → %d bytes: want it pruned", out.Status, out.Reason, len(body), len(sent))
	}

	// The selections made are stored: the same request again makes no call,
	// and the calls it may make go to the pages still without one.
	_, again := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: body})
	if n := r.calls.Load(); n != 32 {
		t.Errorf("%d retriever calls after the second request, want 32", n)
	}
	pruned = 0
	for _, pg := range again.Pages {
		if pg.Status == focusgate.StatusPruned {
			pruned++
		}
	}
	if pruned != 32 {
		t.Errorf("second request: %d pages pruned, want the 16 stored and 16 more", pruned)
	}
}

// A context-window rescue of a conversation with many older pages that
// have no stored selection makes no more calls than the bound: the newest
// pages get them, and the rest go out as stubs.
func TestARescueMakesBoundedCalls(t *testing.T) {
	r := &countingRetriever{}
	p := fanoutPipeline(r, 8, nil)
	var steps [][2]string
	for _, pg := range distinctPages(t, 40) {
		steps = append(steps, [2]string{"snapshot", pg})
	}
	body := workload.ToolLoop("gpt-4.1", steps...)
	_, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: body, Rescue: true})
	if n := r.calls.Load(); n != 8 {
		t.Errorf("%d retriever calls, want the bound, 8", n)
	}
	if out.Rescue != focusgate.RescueRescued {
		t.Fatalf("rescue %q, want rescued", out.Rescue)
	}
	stubbed := 0
	for i, pg := range out.Pages {
		if pg.Status != focusgate.StatusPruned {
			t.Errorf("page %d: %s %s; in a rescue every page goes pruned, as stubs past the bound", i, pg.Status, pg.Reason)
		}
		if pg.Reason == focusgate.ReasonRetrieverLimit {
			stubbed++
			if i >= 32 {
				t.Errorf("page %d, among the newest eight, went as stubs", i)
			}
		}
	}
	if stubbed != 32 {
		t.Errorf("%d pages as stubs, want 32", stubbed)
	}
}

// blockingRetriever answers only once released, counting the calls it
// holds at once.
type blockingRetriever struct {
	release        chan struct{}
	entered        chan struct{}
	inFlight, most atomic.Int32
}

func (r *blockingRetriever) Select(ctx context.Context, q prune.Query) (prune.Selection, error) {
	n := r.inFlight.Add(1)
	defer r.inFlight.Add(-1)
	for {
		m := r.most.Load()
		if n <= m || r.most.CompareAndSwap(m, n) {
			break
		}
	}
	r.entered <- struct{}{}
	select {
	case <-r.release:
	case <-ctx.Done():
		return prune.Selection{}, ctx.Err()
	}
	return wordRetriever{}.Select(ctx, q)
}

// Across the gateway, no more retriever calls are in flight than the gate
// lets through; the others wait for a place and are then made.
func TestTheGateBoundsCallsInFlight(t *testing.T) {
	r := &blockingRetriever{release: make(chan struct{}), entered: make(chan struct{}, 64)}
	gate := prune.NewGate(2)
	p := fanoutPipeline(r, 16, gate)
	pages := distinctPages(t, 6)
	done := make(chan focusgate.Outcome, len(pages))
	for _, pg := range pages {
		body := workload.ToolLoop("gpt-4.1", [2]string{"snapshot", pg})
		go func() {
			_, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: body})
			done <- out
		}()
	}
	<-r.entered
	<-r.entered
	if got := gate.InFlight(); got != 2 {
		t.Errorf("%d calls in flight, want 2", got)
	}
	close(r.release)
	for range pages {
		if out := <-done; out.Status != focusgate.StatusPruned {
			t.Errorf("a request went %s %s, want pruned once a place came", out.Status, out.Reason)
		}
	}
	if m := r.most.Load(); m > 2 {
		t.Errorf("%d calls were in flight at once, want at most 2", m)
	}
}

// reapplyCounter counts how a pruner's older pages were re-applied: from
// this process's memory, or by a look-up that may wait on the store.
type reapplyCounter struct {
	pipeline.Pruner
	held, waited atomic.Int32
}

func (c *reapplyCounter) Reapply(ctx context.Context, in prune.Input) prune.Result {
	c.waited.Add(1)
	return c.Pruner.Reapply(ctx, in)
}

func (c *reapplyCounter) ReapplyHeld(ctx context.Context, in prune.Input) (prune.Result, bool) {
	res, held := c.Pruner.ReapplyHeld(ctx, in)
	if held {
		c.held.Add(1)
	}
	return res, held
}

// A tool loop's older pages whose selections this process holds (in its
// memory store, or in Redis's in-process front) are re-applied without a
// look-up that waits; without a front, each is looked up in Redis. Either
// way every older page goes out as it did when it was the newest.
func TestHeldPagesAreReappliedWithoutWaiting(t *testing.T) {
	pages := distinctPages(t, 4)
	steps := make([][2]string, len(pages))
	for i, page := range pages {
		steps[i] = [2]string{"snapshot", page}
	}
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) cache.Store
		held  bool
	}{
		{"memory", func(*testing.T) cache.Store { return cache.NewMemory(16<<20, time.Hour) }, true},
		{"redis with its front", func(t *testing.T) cache.Store {
			return cachetest.NewStore(t, redistest.Shared(t), func(o *cache.RedisOptions) { o.FrontBytes = 8 << 20 })
		}, true},
		{"redis without a front", func(t *testing.T) cache.Store { return cachetest.NewStore(t, redistest.Shared(t)) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := "gpt-4.1-mini-" + t.Name() + time.Now().Format(time.RFC3339Nano) // keys of its own on a shared server
			pr := &reapplyCounter{Pruner: prune.New(prune.Config{RetrieverModel: model, MinTokens: 1000, UseHistory: true},
				&countingRetriever{}, cache.New(tc.store(t), nil))}
			opts := goldenOptions()
			opts.Pruner, opts.RetrieverModel = pr, model
			p := pipeline.New(opts)
			var sent []byte
			for n := 1; n <= len(steps); n++ {
				got, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: workload.ToolLoop("gpt-4.1", steps[:n]...)})
				if out.Status != focusgate.StatusPruned {
					t.Fatalf("step %d: %s %s, want pruned", n, out.Status, out.Reason)
				}
				sent = got
			}
			pr.held.Store(0)
			pr.waited.Store(0)
			got, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: workload.ToolLoop("gpt-4.1", steps...)})
			if !bytes.Equal(got, sent) || out.Older.Reapplied != len(steps)-1 {
				t.Errorf("the same request again: %d older pages re-applied, forwarded the same: %v; want %d and the same bytes",
					out.Older.Reapplied, bytes.Equal(got, sent), len(steps)-1)
			}
			held, waited := int(pr.held.Load()), int(pr.waited.Load())
			if want := len(steps) - 1; tc.held && (held != want || waited != 0) || !tc.held && (held != 0 || waited != want) {
				t.Errorf("%d older pages re-applied from memory, %d by a look-up that waits; want all %d %s", held, waited, want,
					map[bool]string{true: "from memory", false: "by a look-up that waits"}[tc.held])
			}
		})
	}
}
