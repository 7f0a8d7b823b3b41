package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/pricing"
	"github.com/focusgate/focusgate/prune"
)

// retrieverFunc scripts a retriever without a server.
type retrieverFunc func(context.Context, prune.Query) (prune.Selection, error)

func (f retrieverFunc) Select(ctx context.Context, q prune.Query) (prune.Selection, error) {
	return f(ctx, q)
}

func TestSurvives(t *testing.T) {
	const line = "\t\t[a405] button 'Order Now'"
	for _, tt := range []struct {
		name, text string
		want       bool
	}{
		{"kept verbatim", "RootWebArea 'x'\n" + line + "\n\t... 3 lines pruned ...", true},
		{"kept as the last line", "RootWebArea 'x'\n" + line, true},
		{"the whole text", line, true},
		{"pruned", "RootWebArea 'x'\n\t... 3 lines pruned ...", false},
		{"ancestor stub", "RootWebArea 'x'\n\t\t[a405] button\n", false},
		{"stub with a pruned mark", "RootWebArea 'x'\n\t\t[a405] button 'Order Now' (pruned)\n", false},
		{"at another depth", "RootWebArea 'x'\n\t\t\t[a405] button 'Order Now'\n", false},
		{"a stub first, the line later", "\t\t[a405] button 'Order Now' (pruned)\n" + line + "\n", true},
	} {
		if got := survives(tt.text, line); got != tt.want {
			t.Errorf("%s: survives = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestFailureReason(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("prune: retriever: %w", context.DeadlineExceeded), "timeout"},
		{context.Canceled, "canceled"},
		{fmt.Errorf("%w: no list", prune.ErrBadAnswer), "bad-answer"},
		{&prune.StatusError{Code: 401, Err: errors.New("invalid key")}, "retriever-http-401"},
		{&prune.StatusError{Code: 503, Err: errors.New("overloaded")}, "retriever-http-503"},
		{errors.New("connection refused"), "retriever-error"},
	} {
		if got := failureReason(tt.err); got != tt.want {
			t.Errorf("failureReason(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// devTraces returns the first n steps of the dev set.
func devTraces(t testing.TB, n int) []Trace {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "traces", "browsergym-dev.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	traces, err := ReadTraces(f, n)
	if err != nil {
		t.Fatal(err)
	}
	return traces
}

// targetRanges keeps the line holding target and two lines either side, as a
// good retriever would.
func targetRanges(q prune.Query, target string) []focusgate.Range {
	for l := range strings.Lines(q.Numbered) {
		var n int
		if _, err := fmt.Sscan(l, &n); err == nil && strings.Contains(l, "["+target+"] ") {
			return []focusgate.Range{{From: max(n-2, 1), To: min(n+2, q.Lines)}}
		}
	}
	return nil
}

func TestRun(t *testing.T) {
	traces := devTraces(t, 3)
	traces[1].Goal = "fail"
	traces = append(traces,
		Trace{ID: "prose", Benchmark: "webarena", AXTree: "Just a sentence.", TargetBID: "1"},
		Trace{ID: "elsewhere", Benchmark: "workarena", AXTree: traces[0].AXTree, TargetBID: "zz9"},
	)
	var calls atomic.Int32
	llm := &LLM{
		RetrieverModel: "gpt-4.1-mini",
		UseHistory:     true,
		Retriever: retrieverFunc(func(_ context.Context, q prune.Query) (prune.Selection, error) {
			calls.Add(1)
			if q.Goal == "fail" {
				return prune.Selection{Usage: focusgate.RetrieverUsage{PromptTokens: 9}}, &prune.StatusError{Code: 429, Err: errors.New("rate limited")}
			}
			if !strings.HasPrefix(q.Numbered, "   1 RootWebArea") || q.Lines == 0 {
				return prune.Selection{}, fmt.Errorf("not a numbered tree: %.40q", q.Numbered)
			}
			return prune.Selection{Ranges: targetRanges(q, traces[0].TargetBID), Usage: focusgate.RetrieverUsage{PromptTokens: 1000, CompletionTokens: 20}}, nil
		}),
	}
	var bar bytes.Buffer
	results, skipped, err := Run(context.Background(), traces, Options{
		Strategies:  []Strategy{llm, Truncate{Budget: 100}},
		Mode:        focusgate.ModeRemove,
		Model:       testModel,
		Counter:     testCounter,
		Concurrency: 2,
		Progress:    &bar,
	})
	if err != nil {
		t.Fatal(err)
	}

	wantSkips := []Skip{{ID: "prose", Benchmark: "webarena", Reason: "no-tree"}, {ID: "elsewhere", Benchmark: "workarena", Reason: "target-not-in-tree"}}
	if fmt.Sprint(skipped) != fmt.Sprint(wantSkips) {
		t.Errorf("skipped %v, want %v", skipped, wantSkips)
	}
	if len(results) != 6 || calls.Load() != 3 {
		t.Fatalf("%d results from %d retriever calls, want 6 from 3", len(results), calls.Load())
	}
	for i, r := range results {
		if want := traces[i/2].ID; r.ID != want {
			t.Errorf("result %d is for step %s, want %s: results in trace order", i, r.ID, want)
		}
	}

	pruned := results[0]
	if pruned.Strategy != "llm" || pruned.RetrieverModel != "gpt-4.1-mini" || pruned.Failure != "" ||
		!pruned.Recalled || pruned.TokensAfter >= pruned.TokensBefore/2 || pruned.Usage.PromptTokens != 1000 {
		t.Errorf("llm on step 1: %+v, want pruned to a few lines with the target", pruned)
	}
	failed := results[2]
	if failed.Failure != "retriever-http-429" || failed.TokensAfter != failed.TokensBefore || !failed.Recalled ||
		failed.Usage.PromptTokens != 9 || !errors.As(failed.Err, new(*prune.StatusError)) {
		t.Errorf("llm on step 2: %+v, want failed open: unpruned, recalled, usage and error kept", failed)
	}
	truncated := results[1]
	if truncated.Strategy != "truncate@100" || truncated.RetrieverModel != "" || truncated.Recalled || truncated.TokensAfter > 150 {
		t.Errorf("truncate on step 1: %+v, want about 100 tokens without the target", truncated)
	}
	if !strings.Contains(bar.String(), "] 5/5 steps") || !strings.HasSuffix(bar.String(), "\r\x1b[K") {
		t.Errorf("progress bar %q, want 5/5 steps drawn and then erased", bar.String())
	}
}

// rootOnly keeps the root line alone: it chooses no target, so whatever it
// recalls, the gateway's rules kept.
type rootOnly struct{}

func (rootOnly) Name() string { return "root-only" }

func (rootOnly) Select(context.Context, *Step) (prune.Selection, error) {
	return prune.Selection{Ranges: []focusgate.Range{{From: 1, To: 1}}}, nil
}

// The focused element's line is always kept, so a step whose target is the
// focused element counts as recalled whatever the strategy chose; recall
// without focus counts only what the strategy chose.
func TestRecallWithAndWithoutTheFocusRule(t *testing.T) {
	var focused, other []Trace
	for _, tr := range devTraces(t, 0) {
		b, ok := detect.Page(tr.AXTree)
		switch {
		case !ok:
		case b.FocusedBID == tr.TargetBID && len(focused) < 3:
			focused = append(focused, tr)
		case b.FocusedBID != tr.TargetBID && len(other) < 3:
			other = append(other, tr)
		}
	}
	if len(focused) < 3 || len(other) < 3 {
		t.Fatalf("the dev set has %d steps whose target has the focus and %d others, want 3 of each", len(focused), len(other))
	}
	results, _, err := Run(context.Background(), append(focused, other...), Options{
		Strategies: []Strategy{rootOnly{}},
		Mode:       focusgate.ModeRemove,
		Model:      testModel,
		Counter:    testCounter,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 6 {
		t.Fatalf("%d results, want 6", len(results))
	}
	for i, r := range results {
		wantFocused := i < 3
		if r.TargetFocused != wantFocused || r.TokensAfter >= r.TokensBefore {
			t.Errorf("step %s: target focused %v, tokens %d -> %d; want focused %v and pruned", r.ID, r.TargetFocused, r.TokensBefore, r.TokensAfter, wantFocused)
		}
		if r.Recalled != wantFocused || r.RecalledWithoutFocus {
			t.Errorf("step %s: recalled %v, without focus %v; want %v, false", r.ID, r.Recalled, r.RecalledWithoutFocus, wantFocused)
		}
	}
	row := Summarize(results, nil, pricing.Default(), testModel).Strategies["root-only"][All]
	if row.Recall != 0.5 || row.RecallWithoutFocus != 0 || row.TargetFocused != 3 {
		t.Errorf("root-only: recall %v, without focus %v, %d focused targets; want 0.5, 0, 3", row.Recall, row.RecallWithoutFocus, row.TargetFocused)
	}
}

func TestRunStopsWhenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	blocked := &LLM{Retriever: retrieverFunc(func(ctx context.Context, _ prune.Query) (prune.Selection, error) {
		cancel()
		<-ctx.Done()
		return prune.Selection{}, ctx.Err()
	})}
	_, _, err := Run(ctx, devTraces(t, 20), Options{Strategies: []Strategy{blocked}, Model: testModel, Counter: testCounter})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v, want context.Canceled", err)
	}
}
