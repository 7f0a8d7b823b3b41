package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/pricing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run with -update to accept):\n%s", path, got)
	}
}

// handMade are the results of two strategies on five steps of two
// benchmarks, with round numbers.
func handMade() []StepResult {
	llm := func(bench string, before, after int, recalled bool, ms int, failure string) StepResult {
		r := StepResult{Strategy: "llm", Benchmark: bench, RetrieverModel: "gpt-4.1-mini", TokensBefore: before, TokensAfter: after,
			Recalled: recalled, Latency: time.Duration(ms) * time.Millisecond, Usage: focusgate.RetrieverUsage{PromptTokens: 1000, CompletionTokens: 100}}
		if failure != "" {
			r.Failure, r.Err = failure, errors.New("retriever said "+failure)
		}
		return r
	}
	bm25 := func(bench string, before, after int, recalled bool) StepResult {
		return StepResult{Strategy: "bm25@2000", Benchmark: bench, TokensBefore: before, TokensAfter: after, Recalled: recalled}
	}
	rs := []StepResult{
		llm("workarena", 1000, 500, true, 100, ""), bm25("workarena", 1000, 900, true),
		llm("workarena", 2000, 500, true, 300, ""), bm25("workarena", 2000, 1800, false),
		llm("workarena", 4000, 4000, true, 20000, "timeout"), bm25("workarena", 4000, 2000, false),
		llm("workarena", 4000, 1000, false, 200, ""), bm25("workarena", 4000, 2000, true),
		llm("webarena", 8000, 8000, true, 50, "retriever-http-401"), bm25("webarena", 8000, 2000, true),
	}
	for i := range rs {
		rs[i].RecalledWithoutFocus = rs[i].Recalled
	}
	// In the first step the target is the focused element: the llm kept it
	// only because the gateway keeps the focus, bm25 chose it.
	rs[0].TargetFocused, rs[0].RecalledWithoutFocus = true, false
	rs[1].TargetFocused = true
	return rs
}

func TestSummarize(t *testing.T) {
	skipped := []Skip{{ID: "s", Benchmark: "webarena", Reason: "no-tree"}}
	r := Summarize(handMade(), skipped, pricing.Default(), "gpt-4.1")

	workarena := r.Strategies["llm"]["workarena"]
	// Reductions 0.5, 0.75, 0 (failed open), 0.75; sizes 500, 500, 1000, 4000.
	want := Row{Steps: 4, Recall: 0.75, RecallWithoutFocus: 0.5, TargetFocused: 1, MeanReduction: 0.5, TokensP50: 500, TokensP95: 4000}
	if workarena.Steps != want.Steps || workarena.Recall != want.Recall || workarena.RecallWithoutFocus != want.RecallWithoutFocus ||
		workarena.TargetFocused != want.TargetFocused || workarena.MeanReduction != want.MeanReduction ||
		workarena.TokensP50 != want.TokensP50 || workarena.TokensP95 != want.TokensP95 {
		t.Errorf("llm on workarena: %+v, want %+v", workarena, want)
	}
	// 5,000 tokens removed at gpt-4.1's $2 per million.
	if workarena.SavedUSD == nil || !near(*workarena.SavedUSD, 0.01) {
		t.Errorf("saved %v, want $0.01", workarena.SavedUSD)
	}
	s := workarena.Retriever
	// 4,000 prompt tokens at $0.40 and 400 completion tokens at $1.60 per million.
	if s == nil || s.Model != "gpt-4.1-mini" || s.PromptTokens != 4000 || s.CompletionTokens != 400 ||
		s.CostUSD == nil || !near(*s.CostUSD, 0.00224) || s.LatencyP50MS != 200 || s.LatencyP95MS != 20000 ||
		s.FailedOpen != 1 || len(s.Failures) != 1 || s.Failures[0] != (Failure{Reason: "timeout", Steps: 1, Example: "retriever said timeout"}) {
		t.Errorf("llm retriever on workarena: %+v", s)
	}

	all := r.Strategies["llm"][All]
	if all.Steps != 5 || all.Recall != 0.8 || !near(all.MeanReduction, 0.4) || all.Retriever.FailedOpen != 2 || len(all.Retriever.Failures) != 2 {
		t.Errorf("llm on all: %+v", all)
	}
	if b := r.Strategies["bm25@2000"][All]; b.Retriever != nil || b.Recall != 0.6 || b.RecallWithoutFocus != 0.6 || b.TokensP50 != 2000 {
		t.Errorf("bm25 on all: %+v, want no retriever stats", b)
	}

	unknown := Summarize(handMade(), nil, pricing.Default(), "my-own-model")
	if row := unknown.Strategies["llm"][All]; row.SavedUSD != nil {
		t.Errorf("saved %v for an action model without a price, want nil", *row.SavedUSD)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestPercentile(t *testing.T) {
	for _, tt := range []struct {
		sorted        []int
		p50, p95, p99 int
	}{
		{[]int{7}, 7, 7, 7},
		{[]int{1, 2}, 1, 2, 2},
		{[]int{1, 2, 3, 4}, 2, 4, 4},
		{[]int{10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150, 160, 170, 180, 190, 200}, 100, 190, 200},
	} {
		if p50, p95, p99 := percentile(tt.sorted, 0.5), percentile(tt.sorted, 0.95), percentile(tt.sorted, 0.99); p50 != tt.p50 || p95 != tt.p95 || p99 != tt.p99 {
			t.Errorf("%v: p50 %d, p95 %d, p99 %d; want %d, %d, %d", tt.sorted, p50, p95, p99, tt.p50, tt.p95, tt.p99)
		}
	}
}

func TestReportGolden(t *testing.T) {
	t.Run("hand-made", func(t *testing.T) {
		var tables bytes.Buffer
		for _, model := range []string{"gpt-4.1", "my-own-model"} {
			results := handMade()
			for i := range results {
				if results[i].RetrieverModel != "" {
					results[i].RetrieverModel = model
				}
			}
			r := Summarize(results, []Skip{{ID: "a", Reason: "no-tree"}, {ID: "b", Reason: "target-not-in-tree"}, {ID: "c", Reason: "no-tree"}}, pricing.Default(), model)
			if err := r.WriteTable(&tables); err != nil {
				t.Fatal(err)
			}
			tables.WriteString("\n")
		}
		golden(t, "handmade.txt", tables.Bytes())
	})

	// The baselines on real steps: what the table and the JSON look like,
	// and a check that their numbers do not drift unnoticed.
	t.Run("dev set baselines", func(t *testing.T) {
		// Every eighth step: 62 steps of both benchmarks.
		var sample []Trace
		for i, tr := range devTraces(t, 0) {
			if i%8 == 0 {
				sample = append(sample, tr)
			}
		}
		results, skipped, err := Run(context.Background(), sample, Options{
			Strategies: []Strategy{Truncate{Budget: 1000}, BM25{Budget: 1000}},
			Mode:       focusgate.ModeRemove,
			Model:      testModel,
			Counter:    testCounter,
		})
		if err != nil {
			t.Fatal(err)
		}
		r := Summarize(results, skipped, pricing.Default(), testModel)
		var table bytes.Buffer
		if err := r.WriteTable(&table); err != nil {
			t.Fatal(err)
		}
		golden(t, "dev-sample.txt", table.Bytes())
		js, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "dev-sample.json", append(js, '\n'))
	})
}

// A failure of the pruner's own carries no strategy error: its note names
// the reason without an empty example.
func TestFailureNoteWithoutExample(t *testing.T) {
	s := &RetrieverStats{FailedOpen: 3, Failures: []Failure{{Reason: "retriever-http-500", Steps: 2, Example: "overloaded"}, {Reason: "canceled", Steps: 1}}}
	want := "llm on workarena: 3 steps failed open and went unpruned:\n  retriever-http-500: 2 (overloaded)\n  canceled: 1"
	if got := failureNote("llm", "workarena", s); got != want {
		t.Errorf("note\n%s\nwant\n%s", got, want)
	}
}
