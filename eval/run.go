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
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/focusgate/focusgate"
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
	Latency              time.Duration // spent choosing the lines
	Usage                prune.Usage
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
// step is a result, not an error; Run fails only when ctx ends.
func Run(ctx context.Context, traces []Trace, opts Options) ([]StepResult, []Skip, error) {
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
// be evaluated.
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
	targetLine := tree.Text[tree.Lines[target].Start:tree.Lines[target].End]
	targetFocused := tree.FocusedBID != "" && tree.FocusedBID == t.TargetBID
	unfocused := tree
	unfocused.FocusedBID = ""
	step := &Step{
		Goal:       t.Goal,
		History:    historyText(t.History),
		Tree:       tree,
		LineTokens: lineTokens(opts.Counter, opts.Model, tree),
	}
	before := opts.Counter.Count(opts.Model, tree.Text)

	results := make([]StepResult, 0, len(opts.Strategies))
	for _, st := range opts.Strategies {
		r := StepResult{
			Strategy:             st.Name(),
			Benchmark:            t.Benchmark,
			ID:                   t.ID,
			TokensBefore:         before,
			TokensAfter:          before,
			Recalled:             true,
			TargetFocused:        targetFocused,
			RecalledWithoutFocus: true,
		}
		if l, ok := st.(*LLM); ok {
			r.RetrieverModel = l.RetrieverModel
		}
		start := time.Now()
		sel, err := st.Select(ctx, step)
		r.Latency, r.Usage = time.Since(start), sel.Usage
		if err != nil {
			r.Failure, r.Err = failureReason(err), err
		} else if out, err := prune.Apply(tree, sel, opts.Mode); err != nil {
			r.Failure, r.Err = "postprocess-error", err
		} else if after := opts.Counter.Count(opts.Model, out); after < before {
			// Like the gateway, a result no smaller than the original is
			// not used.
			r.TokensAfter, r.Recalled = after, survives(out, targetLine)
			r.RecalledWithoutFocus = r.Recalled
			if targetFocused {
				// Would the target be there had the strategy alone
				// decided?
				alone, err := prune.Apply(unfocused, sel, opts.Mode)
				r.RecalledWithoutFocus = err == nil && survives(alone, targetLine)
			}
		}
		results = append(results, r)
	}
	return results, ""
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

// survives reports whether line is a whole line of text. A stub of it
// ("[a405] button (pruned)") does not count, nor does a line that merely
// contains it.
func survives(text, line string) bool {
	for off := 0; ; {
		i := strings.Index(text[off:], line)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(line)
		if (i == 0 || text[i-1] == '\n') && (end == len(text) || text[end] == '\n') {
			return true
		}
		off = i + 1
	}
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
