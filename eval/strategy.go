package eval

import (
	"context"
	"slices"
	"strconv"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/prune"
)

// Strategy chooses the lines of a step's tree to keep. Every strategy is the
// retriever of the gateway's own pruner (prune.Pruner), which applies its
// selection in the same mode and keeps the result only if it has fewer
// tokens, so that strategies differ only in what they choose.
type Strategy interface {
	// Name labels the strategy's rows in the report.
	Name() string
	Select(ctx context.Context, s *Step) (prune.Selection, error)
}

// Step is one trace step as a strategy sees it.
type Step struct {
	Goal    string
	History string
	Tree    prune.Tree
	// LineTokens[i] counts line i with what separates it from the next
	// line, so that the counts add up to the tree's.
	LineTokens []int
	// Query is what the pruner would send a retriever model for this step:
	// the numbered tree, the goal, the history when the strategy's settings
	// send it, and the prompt variant.
	Query prune.Query
}

// Truncate keeps lines from the top of the tree while their tokens fit in
// Budget: bottom truncation, what GenericAgent does with a prompt that is
// too long. It truncates the tree only; the papers' truncation baseline cuts
// the whole prompt, so the two are not comparable number for number.
type Truncate struct{ Budget int }

func (t Truncate) Name() string { return "truncate@" + strconv.Itoa(t.Budget) }

func (t Truncate) Select(_ context.Context, s *Step) (prune.Selection, error) {
	used, n := 0, 0
	for n < len(s.LineTokens) && used+s.LineTokens[n] <= t.Budget {
		used += s.LineTokens[n]
		n++
	}
	// Apply keeps the root anyway; a selection never names zero lines.
	return prune.Selection{Ranges: []focusgate.Range{{From: 1, To: max(n, 1)}}}, nil
}

// BM25 ranks the lines of the tree against the goal with Okapi BM25 and
// keeps the best ones that fit in Budget, in their original order. The root
// line is always kept and counts against the budget. Ranking goes down the
// whole list: a line too large for what is left of the budget is passed
// over for smaller ones after it, and lines that share no term with the
// goal fill what remains from the top, as truncation would. It ranks single
// lines against the goal alone, a simpler baseline than the reference's,
// which ranks chunks of the page against the goal and the history.
type BM25 struct{ Budget int }

func (b BM25) Name() string { return "bm25@" + strconv.Itoa(b.Budget) }

func (b BM25) Select(_ context.Context, s *Step) (prune.Selection, error) {
	docs := make([][]string, len(s.Tree.Lines))
	for i, l := range s.Tree.Lines {
		docs[i] = terms(s.Tree.Text[l.Start:l.End])
	}
	keep := make([]bool, len(docs))
	keep[0] = true
	used := s.LineTokens[0]
	for _, i := range bm25Rank(docs, terms(s.Goal)) {
		if !keep[i] && used+s.LineTokens[i] <= b.Budget {
			keep[i] = true
			used += s.LineTokens[i]
		}
	}
	return prune.Selection{Ranges: keptRanges(keep)}, nil
}

// keptRanges turns one flag per line into the ranges of a Selection.
func keptRanges(keep []bool) []focusgate.Range {
	var rs []focusgate.Range
	for i, k := range keep {
		switch {
		case !k:
		case len(rs) > 0 && rs[len(rs)-1].To == i:
			rs[len(rs)-1].To = i + 1
		default:
			rs = append(rs, focusgate.Range{From: i + 1, To: i + 1})
		}
	}
	return rs
}

// LLM asks a retriever model which lines matter, as the gateway does: with
// the query the pruner builds, so Variant and UseHistory configure the
// pruner of its steps.
type LLM struct {
	Retriever prune.Retriever
	// RetrieverModel names the model behind Retriever, whose price the
	// report applies to its token usage.
	RetrieverModel string
	Variant        focusgate.Variant
	// UseHistory sends the episode's earlier actions with the goal.
	UseHistory bool
}

func (l *LLM) Name() string { return "llm" }

func (l *LLM) Select(ctx context.Context, s *Step) (prune.Selection, error) {
	return l.Retriever.Select(ctx, s.Query)
}

// StrategyNames are the strategies a command line may name, in the order
// Strategies returns them whatever the order they were named in.
var StrategyNames = []string{"llm", "truncate", "bm25"}

// Strategies builds the named strategies, in StrategyNames order: llm (which
// is nil when it is not named), and one truncate and one bm25 baseline per
// token budget, so that each budget gets rows of its own.
func Strategies(names []string, budgets []int, llm *LLM) []Strategy {
	var out []Strategy
	for _, name := range StrategyNames {
		if !slices.Contains(names, name) {
			continue
		}
		switch name {
		case "llm":
			out = append(out, llm)
		case "truncate":
			for _, b := range budgets {
				out = append(out, Truncate{Budget: b})
			}
		case "bm25":
			for _, b := range budgets {
				out = append(out, BM25{Budget: b})
			}
		}
	}
	return out
}
