package prune

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// traceStep is the part of a dev-trace record these tests use.
type traceStep struct {
	Goal      string `json:"goal"`
	AXTree    string `json:"axtree_txt"`
	TargetBID string `json:"target_bid"`
}

func readTraces(t *testing.T) []traceStep {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "traces", "browsergym-dev.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var steps []traceStep
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var s traceStep
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return steps
}

// TestTraceReduction prunes every step of the dev traces with a scripted
// selection (the target's line and 20 lines either side), through Pruner as
// the gateway would, and logs the mean per-step token reduction per mode.
func TestTraceReduction(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes 491 real trees")
	}
	steps := readTraces(t)
	if len(steps) == 0 {
		t.Fatal("no trace steps")
	}
	const neighbours = 20
	modes := []Mode{Remove, Ancestors, Stubs}
	sums := map[Mode]float64{}
	pruned := map[Mode]int{}
	small := 0 // steps the default FOCUSGATE_MIN_TOKENS would leave alone
	p := New(Config{Counter: NewCounter(64 << 20)}, nil, nil)
	for k, step := range steps {
		tree := browserGymTree(step.AXTree)
		target := -1
		for i, l := range tree.Lines {
			if l.BID == step.TargetBID {
				target = i
				break
			}
		}
		if target < 0 {
			t.Fatalf("step %d: target %q not in the tree", k, step.TargetBID)
		}
		p.retriever = retrieverFunc(func(_ context.Context, q Query) (Selection, error) {
			return Selection{Ranges: normalize([]Range{{target + 1 - neighbours, target + 1 + neighbours}}, q.Lines)}, nil
		})
		targetLine := lineText(tree, target)
		if p.cfg.Counter.Count("gpt-4o", tree.Text) < 1000 {
			small++
		}
		for _, mode := range modes {
			res := p.Prune(context.Background(), Input{Tree: tree, Goal: step.Goal, Mode: mode, Model: "gpt-4o"})
			if res.Status == FailedOpen {
				t.Fatalf("step %d %s: failed open: %s", k, mode, res.Reason)
			}
			if !strings.Contains(res.Text, targetLine) {
				t.Errorf("step %d %s: target line %q lost", k, mode, targetLine)
			}
			if mode == Stubs && strings.Count(res.Text, "\n") != strings.Count(tree.Text, "\n") {
				t.Errorf("step %d: stubs changed the line count", k)
			}
			sums[mode] += 1 - float64(res.TokensAfter)/float64(res.TokensBefore)
			if res.Status == Pruned {
				pruned[mode]++
			}
		}
	}
	mean := map[Mode]float64{}
	for _, mode := range modes {
		mean[mode] = sums[mode] / float64(len(steps))
		t.Logf("%-9s mean token reduction %.1f%% over %d steps (%d pruned, the rest no-gain)", mode, 100*mean[mode], len(steps), pruned[mode])
	}
	t.Logf("%d of %d steps are under 1000 tokens", small, len(steps))
	if !(mean[Remove] >= mean[Ancestors] && mean[Ancestors] >= mean[Stubs] && mean[Stubs] > 0) {
		t.Errorf("want remove >= ancestors >= stubs > 0, got %v", mean)
	}
}
