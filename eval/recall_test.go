package eval

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/prune"
)

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

// recording wraps a strategy and keeps what it chose for each step, keyed
// by goal and tree, and how often it was asked.
type recording struct {
	Strategy

	mu    sync.Mutex
	calls int
	sels  map[string]prune.Selection
}

func (r *recording) Select(ctx context.Context, s *Step) (prune.Selection, error) {
	sel, err := r.Strategy.Select(ctx, s)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.sels == nil {
		r.sels = map[string]prune.Selection{}
	}
	r.sels[s.Goal+"\x00"+s.Tree.Text] = sel
	return sel, err
}

// everything keeps every line, which removes nothing.
type everything struct{}

func (everything) Name() string { return "everything" }

func (everything) Select(_ context.Context, s *Step) (prune.Selection, error) {
	return prune.Selection{Ranges: []focusgate.Range{{From: 1, To: len(s.Tree.Lines)}}}, nil
}

// What Run reports is what the pruned page shows: in every mode, a step is
// recalled exactly when the target's line is a whole line of the page the
// strategy's selection gives (with the focus rule, and without it on the
// tree with no focus), a page that is not smaller goes on unpruned, and the
// strategy is asked once per step although a focused target's step is
// pruned twice.
func TestRecallIsWhatThePrunedPageShows(t *testing.T) {
	traces := devTraces(t, 0)
	// Every step whose target has the focus, and as many others.
	var sample []Trace
	focused := 0
	for _, tr := range traces {
		if b, ok := detect.Page(tr.AXTree); ok && b.FocusedBID == tr.TargetBID {
			sample = append(sample, tr)
			focused++
		}
	}
	for _, tr := range traces {
		if len(sample) == 2*focused {
			break
		}
		if b, ok := detect.Page(tr.AXTree); ok && b.FocusedBID != tr.TargetBID {
			sample = append(sample, tr)
		}
	}
	byID := map[string]*Trace{}
	for i := range sample {
		byID[sample[i].ID] = &sample[i]
	}
	if len(byID) != len(sample) {
		t.Fatalf("%d steps with %d IDs; the test finds steps by ID", len(sample), len(byID))
	}

	for _, mode := range []focusgate.Mode{focusgate.ModeRemove, focusgate.ModeAncestors, focusgate.ModeStubs} {
		t.Run(string(mode), func(t *testing.T) {
			strategies := []*recording{{Strategy: BM25{Budget: 500}}, {Strategy: Truncate{Budget: 2000}}, {Strategy: rootOnly{}}, {Strategy: everything{}}}
			var sts []Strategy
			for _, r := range strategies {
				sts = append(sts, r)
			}
			results, _, err := Run(context.Background(), sample, Options{Strategies: sts, Mode: mode, Model: testModel, Counter: testCounter, Concurrency: 2})
			if err != nil {
				t.Fatal(err)
			}
			if len(results) != len(sample)*len(sts) {
				t.Fatalf("%d results for %d steps and %d strategies", len(results), len(sample), len(sts))
			}
			pruned, withoutFocus := map[string]int{}, 0
			for i, r := range results {
				rec := strategies[i%len(sts)]
				tr := byID[r.ID]
				b, _ := detect.Page(tr.AXTree)
				tree := prune.NewTree(tr.AXTree[b.Start:b.End], b.Format, b.Lines, b.FocusedBID)
				target := slices.IndexFunc(tree.Lines, func(l focusgate.Line) bool { return l.BID == tr.TargetBID })
				line := tree.Text[tree.Lines[target].Start:tree.Lines[target].End]
				sel, ok := rec.sels[tr.Goal+"\x00"+tree.Text]
				if !ok || r.Failure != "" {
					t.Fatalf("%s on %s: no selection recorded, failure %q", r.Strategy, r.ID, r.Failure)
				}
				out, err := prune.Apply(tree, sel, mode)
				if err != nil {
					t.Fatal(err)
				}
				after := testCounter.Count(testModel, out)
				if after >= r.TokensBefore {
					if r.TokensAfter != r.TokensBefore || !r.Recalled || !r.RecalledWithoutFocus {
						t.Errorf("%s on %s: %d -> %d tokens, recalled %v/%v; want a page of %d tokens unpruned and recalled", r.Strategy, r.ID, r.TokensBefore, r.TokensAfter, r.Recalled, r.RecalledWithoutFocus, after)
					}
					continue
				}
				pruned[r.Strategy]++
				if r.TokensAfter != after || r.Recalled != survives(out, line) {
					t.Errorf("%s on %s: %d tokens, recalled %v; the page has %d tokens and shows the target: %v", r.Strategy, r.ID, r.TokensAfter, r.Recalled, after, survives(out, line))
				}
				unfocused := tree
				unfocused.FocusedBID = ""
				alone, err := prune.Apply(unfocused, sel, mode)
				if err != nil {
					t.Fatal(err)
				}
				if want := survives(alone, line); r.RecalledWithoutFocus != want {
					t.Errorf("%s on %s: recalled without focus %v; the page without focus shows the target: %v", r.Strategy, r.ID, r.RecalledWithoutFocus, want)
				}
				if r.Recalled != r.RecalledWithoutFocus {
					withoutFocus++
				}
			}
			for _, rec := range strategies {
				if rec.calls != len(sample) {
					t.Errorf("%s asked %d times for %d steps, want once per step", rec.Name(), rec.calls, len(sample))
				}
			}
			// The checks above must have had something to check: every
			// strategy but everything pruned most steps, and the focus
			// rule made a difference somewhere.
			for _, name := range []string{"bm25@500", "truncate@2000", "root-only"} {
				if pruned[name] < len(sample)/2 {
					t.Errorf("%s pruned %d of %d steps", name, pruned[name], len(sample))
				}
			}
			if pruned["everything"] != 0 || withoutFocus == 0 {
				t.Errorf("everything pruned %d steps, the focus rule decided %d; want 0 and some", pruned["everything"], withoutFocus)
			}
		})
	}
}

// Options with which the pruner would leave every step alone are refused
// before any strategy is asked.
func TestRunRefusesOptionsThatPruneNothing(t *testing.T) {
	rec := &recording{Strategy: BM25{Budget: 500}}
	for _, tt := range []struct {
		name string
		opts Options
		want string
	}{
		{"mode off", Options{Strategies: []Strategy{rec}, Mode: focusgate.ModeOff}, "eval: mode off prunes nothing"},
		{"unknown mode", Options{Strategies: []Strategy{rec}, Mode: "shrink"}, `eval: unknown mode "shrink"`},
		{"unknown variant", Options{Strategies: []Strategy{rec, &LLM{Variant: "polite"}}, Mode: focusgate.ModeStubs}, `eval: llm: unknown prompt variant "polite"`},
	} {
		tt.opts.Model, tt.opts.Counter = testModel, testCounter
		results, _, err := Run(context.Background(), devTraces(t, 2), tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) || results != nil {
			t.Errorf("%s: %d results, error %v; want none and an error containing %q", tt.name, len(results), err, tt.want)
		}
	}
	if rec.calls != 0 {
		t.Errorf("the strategy was asked %d times, want never", rec.calls)
	}
}

// A retriever's HTTP status stays in the failure's name, as the gateway's
// reason alone (retriever-http-4xx) would not say whether the key or the
// rate is the problem.
func TestFailureKeepsTheRetrieversStatus(t *testing.T) {
	for _, code := range []int{401, 429, 503} {
		llm := &LLM{Retriever: retrieverFunc(func(context.Context, prune.Query) (prune.Selection, error) {
			return prune.Selection{}, &prune.StatusError{Code: code, Err: fmt.Errorf("status %d", code)}
		})}
		results, _, err := Run(context.Background(), devTraces(t, 1), Options{Strategies: []Strategy{llm}, Mode: focusgate.ModeRemove, Model: testModel, Counter: testCounter})
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("retriever-http-%d", code); results[0].Failure != want || results[0].TokensAfter != results[0].TokensBefore {
			t.Errorf("%+v, want failure %s and the step unpruned", results[0], want)
		}
	}
}
