package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/cache/cachetest"
	"github.com/focusgate/focusgate/internal/redistest"
	"github.com/focusgate/focusgate/internal/testlog"
	"github.com/focusgate/focusgate/pipeline"
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

// unboundedPruner is a pruner whose only bound is the pipeline's: its
// retriever calls and cache waits never time out on their own.
func unboundedPruner(rt *retriever, model string, store cache.Store) *prune.Pruner {
	return retrieverPruner(rt, model, store, func(_ *prune.Config, r *prune.RetrieverConfig) { r.Timeout = time.Hour })
}

// assertFailedOpen checks that a body came back as it went in, with the
// reason.
func assertFailedOpen(t *testing.T, got, body []byte, out focusgate.Outcome, reason focusgate.Reason) {
	t.Helper()
	if out.Status != focusgate.StatusFailedOpen || out.Reason != reason {
		t.Errorf("%s %s, want failed-open %s", out.Status, out.Reason, reason)
	}
	if !bytes.Equal(got, body) {
		t.Errorf("%d bytes came back, not the original %d", len(got), len(body))
	}
}

// The budget bounds everything focusgate does before forwarding: however
// long detection, counting, the retriever or another replica's computation
// would take, the original body comes back at the deadline. (How soon after
// the deadline is measured, not asserted: see BENCHMARKS.md.)
func TestDeadlineBoundsAllOfFocusgatesWork(t *testing.T) {
	const deadline = 2 * time.Second
	hang := reply(0, "")

	t.Run("large page, hanging retriever", func(t *testing.T) {
		rt := newRetriever(t, hang)
		p := retrieverPipeline(unboundedPruner(rt, "m", cache.NewMemory(1<<20, time.Hour)), func(o *pipeline.Options) { o.Budget = deadline })
		body := bigPage(t, 4<<20)
		start := time.Now()
		got, out := rewrite(p, chat(body))
		t.Logf("%d MB page returned after %v", len(body)>>20, time.Since(start))
		assertFailedOpen(t, got, body, out, focusgate.ReasonTimeout)
	})

	t.Run("three replicas sharing Redis, hanging retriever", func(t *testing.T) {
		url := redistest.Shared(t)
		rt := newRetriever(t, hang)
		model := fmt.Sprintf("model-%s-%d", t.Name(), time.Now().UnixNano()) // keys of its own on a shared server
		var ps []*pipeline.Pipeline
		for range 3 {
			ps = append(ps, retrieverPipeline(unboundedPruner(rt, model, cachetest.NewStore(t, url)), func(o *pipeline.Options) { o.Budget = deadline }))
		}
		body := readFile(t, laptopRequest)
		var wg sync.WaitGroup
		for i, p := range ps {
			wg.Go(func() {
				start := time.Now()
				got, out := rewrite(p, chat(body))
				t.Logf("replica %d returned after %v", i, time.Since(start))
				assertFailedOpen(t, got, body, out, focusgate.ReasonTimeout)
			})
		}
		wg.Wait()
	})
}

// defect stands for a defect in pruning.
type defect struct{ pipeline.Pruner }

func (defect) Prune(context.Context, prune.Input) prune.Result { panic("pruning defect") }

// A panic while a request is inspected costs the request nothing: it comes
// back as it went in, whether its page was found on the caller's goroutine
// (small bodies) or on the inspection's own.
func TestAPanicWhileInspectingReturnsTheOriginal(t *testing.T) {
	for _, size := range []int{16 << 10, 256 << 10} {
		t.Run(fmt.Sprintf("%d KB page", size>>10), func(t *testing.T) {
			logs := testlog.New()
			p := retrieverPipeline(defect{}, func(o *pipeline.Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
			body := bigPage(t, size)
			got, out := rewrite(p, chat(body))
			assertFailedOpen(t, got, body, out, focusgate.ReasonInternalError)
			logs.WaitFor(t, "panic inspecting a request")
		})
	}
}

// While a request holds the inspection budget, a request that would exceed
// it comes back as it went in, at once.
func TestRequestsOverTheInspectionBudgetGoOutUninspected(t *testing.T) {
	release := make(chan struct{})
	asked := make(chan struct{}, 1)
	rt := newRetriever(t, func(lines []string) (int, string) {
		asked <- struct{}{}
		<-release
		return keep("[a237] combobox")(lines)
	})
	body := readFile(t, laptopRequest)
	p := retrieverPipeline(unboundedPruner(rt, "m", cache.NewMemory(1<<20, time.Hour)), func(o *pipeline.Options) {
		// Room for one such request: its body, and what detection holds of
		// it (about two and a half times the body), not for two bodies more.
		o.InspectBudgetBytes = int64(len(body)) * 4
	})

	first := make(chan focusgate.Outcome, 1)
	go func() {
		_, out := rewrite(p, chat(body))
		first <- out
	}()
	select { // the first request is being inspected
	case <-asked:
	case out := <-first:
		t.Fatalf("the first request came back without asking the retriever: %s %s", out.Status, out.Reason)
	}

	other := bytes.Replace(body, []byte("Standard Laptop"), []byte("Standard Desktop"), 1)
	got, out := rewrite(p, chat(other))
	if out.Status != focusgate.StatusSkipped || out.Reason != focusgate.ReasonBusy {
		t.Errorf("%s %s, want skipped busy", out.Status, out.Reason)
	}
	if !bytes.Equal(got, other) {
		t.Error("the request over the budget did not come back as it went in")
	}

	close(release)
	if out := <-first; out.Status != focusgate.StatusPruned {
		t.Errorf("the request within the budget: %s %s, want pruned", out.Status, out.Reason)
	}
	// The budget is free again.
	if _, out := rewrite(p, chat(other)); out.Reason == focusgate.ReasonBusy {
		t.Error("the budget was not given back")
	}
}

// Once the pipeline stops pruning for shutdown, a request waiting for the
// retriever comes back unpruned at once, and later ones are not inspected.
func TestStopSendsWaitingRequestsOnUnpruned(t *testing.T) {
	asked := make(chan struct{}, 1)
	rt := newRetriever(t, func([]string) (int, string) {
		asked <- struct{}{}
		return 0, "" // hang
	})
	body := readFile(t, laptopRequest)
	p := retrieverPipeline(unboundedPruner(rt, "m", cache.NewMemory(1<<20, time.Hour)))

	type result struct {
		body []byte
		out  focusgate.Outcome
	}
	done := make(chan result, 1)
	go func() {
		got, out := rewrite(p, chat(body))
		done <- result{got, out}
	}()
	<-asked
	p.Stop()
	r := <-done
	assertFailedOpen(t, r.body, body, r.out, focusgate.ReasonShutdown)

	if got, out := rewrite(p, chat(body)); out.Status != focusgate.StatusSkipped || out.Reason != focusgate.ReasonShutdown || !bytes.Equal(got, body) {
		t.Errorf("after Stop: %s %s, want skipped shutdown and the body as it came", out.Status, out.Reason)
	}
}

// gatedPruner stands for pruning that cannot be interrupted: it says when it
// has begun, and returns only once gate is closed, whatever its context says.
type gatedPruner struct {
	pipeline.Pruner
	begun, gate chan struct{}
}

func (g gatedPruner) Prune(context.Context, prune.Input) prune.Result {
	close(g.begun)
	<-g.gate
	return prune.Result{}
}

// An inspection abandoned while it runs (its budget spent, its client gone)
// goes on reading the body on its worker after the body has gone out as it
// came: the caller's Holder keeps the body's memory from being reused until
// that work is done, and is released exactly once.
func TestAnAbandonedInspectionHoldsTheBodyUntilItEnds(t *testing.T) {
	pr := gatedPruner{begun: make(chan struct{}), gate: make(chan struct{})}
	p := retrieverPipeline(pr)
	t.Cleanup(p.Stop)
	holder := &countingHolder{released: make(chan struct{})}
	req := chat(bigPage(t, 256<<10)) // inspected on a worker of its own
	req.Holder = holder
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-pr.begun
		cancel()
	}()

	got, out := p.Rewrite(ctx, req)
	assertFailedOpen(t, got, req.Body, out, focusgate.ReasonCanceled)
	if n := holder.holds.Load(); n != 1 {
		t.Fatalf("the body was held %d times, want once", n)
	}
	select {
	case <-holder.released:
		t.Fatal("the body was released while its inspection was still running")
	default:
	}
	close(pr.gate)
	<-holder.released
	if n := holder.releases.Load(); n != 1 {
		t.Errorf("the body was released %d times, want once", n)
	}
}

// countingHolder counts its holds and releases; released is closed at the
// first release.
type countingHolder struct {
	holds, releases atomic.Int32
	released        chan struct{}
}

func (h *countingHolder) Hold() { h.holds.Add(1) }

func (h *countingHolder) Release() {
	if h.releases.Add(1) == 1 {
		close(h.released)
	}
}
