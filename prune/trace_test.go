package prune_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/eval"
	"github.com/focusgate/focusgate/prune"
)

// scripted plays a retriever that found the right element: it keeps the
// target's line and neighbours lines on either side.
type scripted struct{ from, to int }

func (s *scripted) Select(context.Context, prune.Query) (prune.Selection, error) {
	return prune.Selection{Ranges: []focusgate.Range{{From: s.from, To: s.to}}}, nil
}

// TestTraceReduction prunes every step of the dev traces, detected as the
// gateway detects them, with a scripted selection (the target's line and 20
// lines either side), through Pruner as the gateway would, and logs the
// mean per-step token reduction of each mode: what each mode costs in
// tokens for the same selection.
func TestTraceReduction(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes 491 real trees")
	}
	f, err := os.Open("../testdata/traces/browsergym-dev.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	steps, err := eval.ReadTraces(f, 0)
	if err != nil || len(steps) == 0 {
		t.Fatalf("reading traces: %d steps, %v", len(steps), err)
	}
	const neighbours = 20
	modes := []focusgate.Mode{focusgate.ModeRemove, focusgate.ModeAncestors, focusgate.ModeStubs}
	sums := map[focusgate.Mode]float64{}
	pruned := map[focusgate.Mode]int{}
	sel := &scripted{}
	p := prune.New(prune.Config{Counter: prune.NewCounter(64 << 20)}, sel, nil)
	for k, step := range steps {
		blocks := detect.Blocks(step.AXTree)
		if len(blocks) != 1 {
			t.Fatalf("step %d: %d trees detected", k, len(blocks))
		}
		b := blocks[0]
		tree := prune.NewTree(step.AXTree[b.Start:b.End], b.Format, b.Lines, b.FocusedBID)
		target := slices.IndexFunc(tree.Lines, func(l focusgate.Line) bool { return l.BID == step.TargetBID })
		if target < 0 {
			t.Fatalf("step %d: target %q not in the tree", k, step.TargetBID)
		}
		sel.from, sel.to = max(target+1-neighbours, 1), min(target+1+neighbours, len(tree.Lines))
		targetLine := tree.Text[tree.Lines[target].Start:tree.Lines[target].End]
		for _, mode := range modes {
			res := p.Prune(context.Background(), prune.Input{Tree: tree, Goal: step.Goal, Mode: mode, Model: "gpt-4o"})
			if res.Status == focusgate.StatusFailedOpen {
				t.Fatalf("step %d %s: failed open: %s", k, mode, res.Reason)
			}
			if !strings.Contains(res.Text, targetLine) {
				t.Errorf("step %d %s: target line %q lost", k, mode, targetLine)
			}
			if mode == focusgate.ModeStubs && strings.Count(res.Text, "\n") != strings.Count(tree.Text, "\n") {
				t.Errorf("step %d: stubs changed the line count", k)
			}
			sums[mode] += 1 - float64(res.TokensAfter)/float64(res.TokensBefore)
			if res.Status == focusgate.StatusPruned {
				pruned[mode]++
			}
		}
	}
	mean := map[focusgate.Mode]float64{}
	for _, mode := range modes {
		mean[mode] = sums[mode] / float64(len(steps))
		t.Logf("%-9s mean token reduction %.1f%% over %d steps (%d pruned, the rest no-gain)", mode, 100*mean[mode], len(steps), pruned[mode])
	}
	if !(mean[focusgate.ModeRemove] >= mean[focusgate.ModeAncestors] && mean[focusgate.ModeAncestors] >= mean[focusgate.ModeStubs] && mean[focusgate.ModeStubs] > 0) {
		t.Errorf("want remove >= ancestors >= stubs > 0, got %v", mean)
	}
}
