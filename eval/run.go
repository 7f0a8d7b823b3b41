package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/prune"
)

// counterMemoBytes bounds the token-count memo of a Run given no Counter:
// enough for the lines of a few thousand pages.
const counterMemoBytes = 64 << 20

// Options configure Run.
type Options struct {
	Strategies []Strategy
	Mode       focusgate.Mode // post-processing of every strategy's selection
	Model      string         // the action model, whose tokenizer counts tokens
	// Counter counts tokens; nil means a new one. One shared with other
	// work reuses what it has counted before.
	Counter *prune.Counter
	// Concurrency bounds the steps evaluated at once; below 1 means 1.
	Concurrency int
	// Progress receives a progress bar redrawn in place, for a terminal;
	// nil draws none.
	Progress io.Writer
}

// check refuses options with which the pruner would leave every step
// alone.
func (opts Options) check() error {
	mode, err := focusgate.ParseMode(string(opts.Mode))
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if mode == focusgate.ModeOff {
		return fmt.Errorf("eval: mode %s prunes nothing to measure (use %s, %s or %s)", mode, focusgate.ModeRemove, focusgate.ModeAncestors, focusgate.ModeStubs)
	}
	for _, st := range opts.Strategies {
		if l, ok := st.(*LLM); ok {
			if _, err := focusgate.ParseVariant(string(l.Variant)); err != nil {
				return fmt.Errorf("eval: %s: %w", l.Name(), err)
			}
		}
	}
	return nil
}

// StepResult is what one strategy did to one step.
type StepResult struct {
	Strategy  string
	Benchmark string
	ID        string
	// RetrieverModel is the model the strategy called; empty for the
	// baselines, which call none.
	RetrieverModel string
	TokensBefore   int
	TokensAfter    int // TokensBefore when the step went unpruned
	// Recalled says whether the target's line survived verbatim, as the
	// gateway prunes: the focused element's line is always kept.
	Recalled bool
	// TargetFocused says the target is the focused element, which the
	// gateway keeps whatever the strategy chose.
	TargetFocused bool
	// RecalledWithoutFocus is Recalled without that rule: whether the target
	// survived because the strategy chose it. It differs from Recalled only
	// when TargetFocused.
	RecalledWithoutFocus bool
	// Latency is how long the pruner waited for the strategy's selection,
	// as the gateway reports a retriever's time.
	Latency time.Duration
	// Usage is what the strategy's model calls spent, a failed call's
	// included.
	Usage focusgate.RetrieverUsage
	// Failure is why the strategy failed, in which case the step went
	// unpruned, as the gateway fails open; empty when it did not fail.
	Failure string
	Err     error
}

// Skip is a step that could not be evaluated, and why: no-tree (no
// observation was detected in axtree_txt) or target-not-in-tree.
type Skip struct {
	ID        string `json:"id"`
	Benchmark string `json:"benchmark"`
	Reason    string `json:"reason"`
}

// Run prunes every step of traces with every strategy, up to
// opts.Concurrency steps at once, and returns the results in trace order,
// strategies in their order within a step. A strategy's failure on one
// step is a result, not an error; Run fails only on options that would fail
// every step (an unknown mode or prompt variant, or mode off, which prunes
// nothing to measure) and when ctx ends.
func Run(ctx context.Context, traces []Trace, opts Options) ([]StepResult, []Skip, error) {
	if err := opts.check(); err != nil {
		return nil, nil, err
	}
	if opts.Counter == nil {
		opts.Counter = prune.NewCounter(counterMemoBytes)
	}
	perStep := make([][]StepResult, len(traces))
	skipped := make([]string, len(traces))
	bar := newProgress(opts.Progress, len(traces))
	var g errgroup.Group
	g.SetLimit(max(opts.Concurrency, 1))
	for i := range traces {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			perStep[i], skipped[i] = evaluate(ctx, &traces[i], opts)
			bar.step()
			return nil
		})
	}
	_ = g.Wait() // the steps return no errors
	bar.finish()
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("eval: %w", err)
	}

	var results []StepResult
	var skips []Skip
	for i, rs := range perStep {
		results = append(results, rs...)
		if skipped[i] != "" {
			skips = append(skips, Skip{ID: traces[i].ID, Benchmark: traces[i].Benchmark, Reason: skipped[i]})
		}
	}
	return results, skips, nil
}

// evaluate runs every strategy on one step, or returns why the step cannot
// be evaluated. Each strategy goes through the gateway's own pruner
// (prune.Pruner) as its retriever, with the same counter, mode and prompt
// variant, and MinTokens 0 so that every step is pruned: what the gateway
// does with a selection (the root and focus rules, post-processing, the
// fewer-tokens rule, failing open) is what eval measures.
func evaluate(ctx context.Context, t *Trace, opts Options) ([]StepResult, string) {
	b, ok := detect.Page(t.AXTree)
	if !ok {
		return nil, "no-tree"
	}
	tree := prune.NewTree(t.AXTree[b.Start:b.End], b.Format, b.Lines, b.FocusedBID)
	target := slices.IndexFunc(tree.Lines, func(l focusgate.Line) bool { return l.BID == t.TargetBID })
	if target < 0 {
		return nil, "target-not-in-tree"
	}
	targetFocused := tree.FocusedBID != "" && tree.FocusedBID == t.TargetBID
	step := &Step{
		Goal:       t.Goal,
		History:    historyText(t.History),
		Tree:       tree,
		LineTokens: lineTokens(opts.Counter, opts.Model, tree),
	}
	input := prune.Input{Tree: tree, Goal: step.Goal, History: step.History, Mode: opts.Mode, Model: opts.Model}

	results := make([]StepResult, 0, len(opts.Strategies))
	for _, st := range opts.Strategies {
		r := StepResult{Strategy: st.Name(), Benchmark: t.Benchmark, ID: t.ID, TargetFocused: targetFocused}
		cfg := prune.Config{RetrieverModel: st.Name(), Counter: opts.Counter}
		in := input
		if l, ok := st.(*LLM); ok {
			r.RetrieverModel, cfg.RetrieverModel = l.RetrieverModel, l.RetrieverModel
			cfg.UseHistory, in.Variant = l.UseHistory, l.Variant
		}
		sr := &strategyRetriever{strategy: st, step: step}
		// The cache holds this step's selection only, so that the prune
		// without the focus rule below applies it again instead of asking
		// the strategy twice (the focus is not part of the cache key).
		p := prune.New(cfg, sr, cache.New(cache.NewMemory(selectionCacheBytes, 0), nil))
		res := p.Prune(ctx, in)

		r.TokensBefore, r.TokensAfter, r.Latency = res.TokensBefore, res.TokensAfter, res.RetrieverTime
		call := sr.call.Load()
		if call != nil {
			// The strategy's own usage, also when it failed: a failed
			// call is paid for too.
			r.Usage = call.sel.Usage
		}
		switch {
		case res.Status == focusgate.StatusFailedOpen && call != nil && call.err != nil:
			r.Failure, r.Err = failureReason(call.err), call.err
		case res.Status == focusgate.StatusFailedOpen:
			r.Failure = string(res.Reason)
		}
		// What is not pruned goes on whole, the target with it.
		r.Recalled, r.RecalledWithoutFocus = true, true
		if res.Status == focusgate.StatusPruned {
			r.Recalled = kept(res.Kept, target)
			r.RecalledWithoutFocus = r.Recalled
			if targetFocused {
				// Would the target be there had the strategy alone
				// decided? The same selection, from the cache, on the
				// tree without its focus.
				alone := in
				alone.Tree.FocusedBID = ""
				if res := p.Prune(ctx, alone); res.Status == focusgate.StatusPruned {
					r.RecalledWithoutFocus = kept(res.Kept, target)
				}
			}
		}
		results = append(results, r)
	}
	return results, ""
}

// selectionCacheBytes bounds the cache of one step's selection: far more
// than the selection of any tree a request body can hold, so that it is
// always stored.
const selectionCacheBytes = 64 << 20

// strategyRetriever is a Strategy as the pruner's Retriever for one step. It
// keeps what the strategy returned, its error and usage included, which the
// pruner's Result does not carry: eval reports a retriever's HTTP status and
// what a failed call cost.
type strategyRetriever struct {
	strategy Strategy
	step     *Step
	// call is stored by the pruner's computation, which may outlive the
	// Prune call that started it (when ctx ends), hence the atomic.
	call atomic.Pointer[strategyCall]
}

type strategyCall struct {
	sel prune.Selection
	err error
}

var _ prune.Retriever = (*strategyRetriever)(nil)

// Select asks the strategy, handing it the query the pruner built: the
// numbered tree and the goal (and history, with UseHistory) as the gateway
// would send them to a retriever model.
func (sr *strategyRetriever) Select(ctx context.Context, q prune.Query) (prune.Selection, error) {
	s := *sr.step
	s.Query = q
	sel, err := sr.strategy.Select(ctx, &s)
	sr.call.Store(&strategyCall{sel: sel, err: err})
	return sel, err
}

// kept reports whether the line at index i (0-based) is in ranges, the lines
// the pruner kept verbatim.
func kept(ranges []focusgate.Range, i int) bool {
	return slices.ContainsFunc(ranges, func(r focusgate.Range) bool { return r.From <= i+1 && i+1 <= r.To })
}

// lineTokens counts each line of t with what separates it from the next.
func lineTokens(c *prune.Counter, model string, t prune.Tree) []int {
	n := make([]int, len(t.Lines))
	for i, l := range t.Lines {
		end := len(t.Text)
		if i+1 < len(t.Lines) {
			end = t.Lines[i+1].Start
		}
		n[i] = c.Count(model, t.Text[l.Start:end])
	}
	return n
}

// failureReason names why a strategy failed, in the gateway's words, except
// that HTTP errors keep their status: 401 and 429 call for different fixes.
func failureReason(err error) string {
	if status, ok := errors.AsType[*prune.StatusError](err); ok {
		return "retriever-http-" + strconv.Itoa(status.Code)
	}
	return string(prune.Reason(err))
}

// progress draws a bar for a terminal, redrawing it in place whenever it
// moves by a percent. A nil *progress draws nothing.
type progress struct {
	w     io.Writer
	total int

	mu    sync.Mutex
	done  int
	shown int // the percentage drawn last
}

func newProgress(w io.Writer, total int) *progress {
	if w == nil || total == 0 {
		return nil
	}
	return &progress{w: w, total: total, shown: -1}
}

func (p *progress) step() {
	if p == nil {
		return
	}
	const width = 40
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if pct := 100 * p.done / p.total; pct != p.shown {
		p.shown = pct
		fill := width * p.done / p.total
		fmt.Fprintf(p.w, "\r[%s%s] %d/%d steps", strings.Repeat("=", fill), strings.Repeat(" ", width-fill), p.done, p.total)
	}
}

// finish erases the bar, so that what is printed next starts on a clean line.
func (p *progress) finish() {
	if p != nil {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
