package eval

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/focusgate/focusgate/pricing"
)

// All names the row of a strategy that covers every benchmark.
const All = "all"

// Report sums a run up per strategy and benchmark. It marshals to the JSON
// that `focusgate eval --json` prints.
type Report struct {
	// ActionModel is the model whose tokenizer counted the tokens and whose
	// input price values what pruning removed.
	ActionModel string `json:"action_model"`
	// Strategies maps each strategy to its rows: one per benchmark, and All.
	Strategies map[string]map[string]Row `json:"strategies"`
	Skipped    []Skip                    `json:"skipped"`

	order []string // strategies in the order they ran, for the table
}

// Row is one strategy's numbers on one benchmark.
type Row struct {
	Steps int `json:"steps"`
	// Recall is the share of steps whose target line survived verbatim, as
	// the gateway prunes: the focused element's line is always kept, so a
	// step whose target is the focused element counts as recalled whatever
	// the strategy chose.
	Recall float64 `json:"recall"`
	// RecallWithoutFocus is Recall without that rule: the share of steps
	// whose target survived because the strategy chose it.
	RecallWithoutFocus float64 `json:"recall_without_focus"`
	// TargetFocused counts the steps whose target is the focused element.
	TargetFocused int `json:"target_focused"`
	// MeanReduction is 1 - pruned/original tokens, averaged over steps, as
	// the LineRetriever and FocusAgent papers report it.
	MeanReduction float64 `json:"mean_reduction"`
	TokensP50     int     `json:"tokens_p50"` // pruned size
	TokensP95     int     `json:"tokens_p95"`
	// SavedUSD is what the removed tokens would have cost as the action
	// model's input; nil when its price is unknown.
	SavedUSD *float64 `json:"saved_usd"`
	// Retriever is set for a strategy that calls a model.
	Retriever *RetrieverStats `json:"retriever,omitempty"`
}

// RetrieverStats is what a model-calling strategy spent.
type RetrieverStats struct {
	Model            string `json:"model"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	// CostUSD is nil when the model's price is unknown.
	CostUSD      *float64 `json:"cost_usd"`
	LatencyP50MS int64    `json:"latency_p50_ms"`
	LatencyP95MS int64    `json:"latency_p95_ms"`
	// FailedOpen counts the steps left unpruned because the strategy
	// failed; Failures says why, most frequent reason first.
	FailedOpen int       `json:"failed_open"`
	Failures   []Failure `json:"failures"`
}

// Failure is one reason steps failed open.
type Failure struct {
	Reason string `json:"reason"`
	Steps  int    `json:"steps"`
	// Example is the first such error, in trace order; empty when the
	// failure was the pruner's own (the page could not be counted, say),
	// not the strategy's.
	Example string `json:"example"`
}

// Summarize aggregates results, priced with prices: the retriever's usage at
// its model's price, and the tokens removed at actionModel's input price.
func Summarize(results []StepResult, skipped []Skip, prices *pricing.Table, actionModel string) Report {
	r := Report{ActionModel: actionModel, Strategies: map[string]map[string]Row{}, Skipped: skipped}
	if r.Skipped == nil {
		r.Skipped = []Skip{}
	}
	groups := map[string]map[string][]StepResult{}
	for _, res := range results {
		g, ok := groups[res.Strategy]
		if !ok {
			g = map[string][]StepResult{}
			groups[res.Strategy] = g
			r.order = append(r.order, res.Strategy)
		}
		g[res.Benchmark] = append(g[res.Benchmark], res)
		g[All] = append(g[All], res)
	}
	for name, g := range groups {
		rows := make(map[string]Row, len(g))
		for bench, rs := range g {
			rows[bench] = summarize(rs, prices, actionModel)
		}
		r.Strategies[name] = rows
	}
	return r
}

func summarize(rs []StepResult, prices *pricing.Table, actionModel string) Row {
	n := float64(len(rs))
	row := Row{Steps: len(rs)}
	sizes := make([]int, len(rs))
	var reduction float64
	recalled, chosen, removed := 0, 0, 0
	for i, res := range rs {
		sizes[i] = res.TokensAfter
		if res.TokensBefore > 0 {
			reduction += 1 - float64(res.TokensAfter)/float64(res.TokensBefore)
		}
		if res.Recalled {
			recalled++
		}
		if res.RecalledWithoutFocus {
			chosen++
		}
		if res.TargetFocused {
			row.TargetFocused++
		}
		removed += res.TokensBefore - res.TokensAfter
	}
	row.Recall, row.RecallWithoutFocus, row.MeanReduction = float64(recalled)/n, float64(chosen)/n, reduction/n
	slices.Sort(sizes)
	row.TokensP50, row.TokensP95 = percentile(sizes, 0.50), percentile(sizes, 0.95)
	if p, ok := prices.Lookup(actionModel); ok {
		row.SavedUSD = ptr(p.Cost(removed, 0))
	}
	if rs[0].RetrieverModel != "" {
		row.Retriever = retrieverStats(rs, prices)
	}
	return row
}

func retrieverStats(rs []StepResult, prices *pricing.Table) *RetrieverStats {
	s := &RetrieverStats{Model: rs[0].RetrieverModel, Failures: []Failure{}}
	latencies := make([]time.Duration, len(rs))
	for i, res := range rs {
		latencies[i] = res.Latency
		s.PromptTokens += res.Usage.PromptTokens
		s.CompletionTokens += res.Usage.CompletionTokens
		if res.Failure == "" {
			continue
		}
		s.FailedOpen++
		j := slices.IndexFunc(s.Failures, func(f Failure) bool { return f.Reason == res.Failure })
		if j < 0 {
			s.Failures = append(s.Failures, Failure{Reason: res.Failure, Example: errText(res.Err)})
			j = len(s.Failures) - 1
		}
		s.Failures[j].Steps++
	}
	slices.SortStableFunc(s.Failures, func(a, b Failure) int { return cmp.Compare(b.Steps, a.Steps) })
	slices.Sort(latencies)
	s.LatencyP50MS = percentile(latencies, 0.50).Milliseconds()
	s.LatencyP95MS = percentile(latencies, 0.95).Milliseconds()
	if p, ok := prices.Lookup(s.Model); ok {
		s.CostUSD = ptr(p.Cost(s.PromptTokens, s.CompletionTokens))
	}
	return s
}

// percentile is the nearest-rank percentile of sorted, which is not empty.
func percentile[T cmp.Ordered](sorted []T, p float64) T {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

func ptr[T any](v T) *T { return &v }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// WriteTable writes the report as a table, one row per strategy and
// benchmark (an All row too when there are several benchmarks), followed by
// why steps failed open or were skipped.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "strategy\tbenchmark\tsteps\trecall\trecall w/o focus\treduction\tp50 tokens\tp95 tokens\tsaved\tretriever cost\tlatency p50\tlatency p95\tfailed open")
	var notes []string
	for _, name := range r.order {
		for _, bench := range r.benchmarks(name) {
			row := r.Strategies[name][bench]
			retriever := "-\t-\t-\t-"
			if s := row.Retriever; s != nil {
				retriever = fmt.Sprintf("%s\t%d ms\t%d ms\t%d", usd(s.CostUSD), s.LatencyP50MS, s.LatencyP95MS, s.FailedOpen)
				if bench != All && s.FailedOpen > 0 {
					notes = append(notes, failureNote(name, bench, s))
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f%%\t%.1f%%\t%.1f%%\t%d\t%d\t%s\t%s\n", name, bench, row.Steps,
				100*row.Recall, 100*row.RecallWithoutFocus, 100*row.MeanReduction, row.TokensP50, row.TokensP95, usd(row.SavedUSD), retriever)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if note := r.focusNote(); note != "" {
		notes = append([]string{note}, notes...)
	}
	if len(r.Skipped) > 0 {
		notes = append(notes, skipNote(r.Skipped))
	}
	for _, n := range notes {
		if _, err := fmt.Fprintln(w, n); err != nil {
			return err
		}
	}
	return nil
}

// benchmarks lists a strategy's rows in table order: benchmarks by name,
// then All when there is more than one.
func (r Report) benchmarks(strategy string) []string {
	var out []string
	for b := range maps.Keys(r.Strategies[strategy]) {
		if b != All {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	if len(out) > 1 {
		out = append(out, All)
	}
	return out
}

// focusNote says how many steps the focus rule counts as recalled, when
// there are any: every strategy saw the same steps, so the first one's
// count serves.
func (r Report) focusNote() string {
	if len(r.order) == 0 {
		return ""
	}
	rows := r.Strategies[r.order[0]]
	all, ok := rows[All]
	if !ok {
		for _, row := range rows {
			all = row // a single benchmark
		}
	}
	if all.TargetFocused == 0 {
		return ""
	}
	return fmt.Sprintf("recall counts the %d of %d steps whose target is the focused element as recalled, since the gateway always keeps\n"+
		"the focused line; recall w/o focus counts only targets the strategy kept itself.", all.TargetFocused, all.Steps)
}

func usd(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf("$%.4f", *v)
}

func failureNote(strategy, bench string, s *RetrieverStats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %s: %s failed open and went unpruned:", strategy, bench, steps(s.FailedOpen))
	for _, f := range s.Failures {
		fmt.Fprintf(&b, "\n  %s: %d", f.Reason, f.Steps)
		if f.Example != "" {
			fmt.Fprintf(&b, " (%s)", f.Example)
		}
	}
	return b.String()
}

func skipNote(skipped []Skip) string {
	counts := map[string]int{}
	for _, s := range skipped {
		counts[s.Reason]++
	}
	var parts []string
	for _, reason := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", reason, counts[reason]))
	}
	return fmt.Sprintf("skipped %s: %s", steps(len(skipped)), strings.Join(parts, ", "))
}

func steps(n int) string {
	if n == 1 {
		return "1 step"
	}
	return fmt.Sprintf("%d steps", n)
}
