package eval

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/prune"
)

// testCounter is shared by the tests so that each page is encoded once.
var testCounter = prune.NewCounter(64 << 20)

const testModel = "gpt-4.1"

// newStep reads text the way Run does: the largest tree detect finds, its
// lines counted for testModel.
func newStep(t testing.TB, text, goal string) *Step {
	t.Helper()
	blocks := detect.Blocks(text)
	if len(blocks) == 0 {
		t.Fatalf("no tree in %.100q", text)
	}
	b := slices.MaxFunc(blocks, func(x, y detect.Block) int { return (x.End - x.Start) - (y.End - y.Start) })
	tree := prune.Tree{Text: text[b.Start:b.End], Format: b.Format, FocusedBID: b.FocusedBID}
	for _, l := range b.Lines {
		tree.Lines = append(tree.Lines, focusgate.Line(l))
	}
	return &Step{Goal: goal, Tree: tree, LineTokens: lineTokens(testCounter, testModel, tree)}
}

func readAXTree(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "axtrees", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// laptopStep is a real WorkArena order form of 199 lines, about 2,600 tokens.
func laptopStep(t testing.TB) *Step {
	return newStep(t, readAXTree(t, "bgym-pr301_workarena_standard_laptop_form.txt"), "Order 10 Standard Laptops with Adobe Acrobat")
}

// budgets run from below the root line's size to above the whole tree's.
var budgets = []int{1, 50, 500, 1000, 2000, 100_000}

// The lines truncation keeps are the longest prefix of the tree whose tokens
// (as the tokenizer counts that prefix) fit in the budget.
func TestTruncateRespectsBudget(t *testing.T) {
	s := laptopStep(t)
	text, lines := s.Tree.Text, s.Tree.Lines
	// prefix is the text of the first n lines with what follows each.
	prefix := func(n int) string {
		if n >= len(lines) {
			return text
		}
		return text[:lines[n].Start]
	}
	for _, budget := range budgets {
		sel, err := Truncate{Budget: budget}.Select(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if len(sel.Ranges) != 1 || sel.Ranges[0].From != 1 {
			t.Fatalf("budget %d: ranges %v, want one range from line 1", budget, sel.Ranges)
		}
		n := sel.Ranges[0].To
		if kept := testCounter.Count(testModel, prefix(n)); kept > budget && n > 1 {
			t.Errorf("budget %d: kept %d lines of %d tokens", budget, n, kept)
		}
		if n < len(lines) {
			if more := testCounter.Count(testModel, prefix(n+1)); more <= budget {
				t.Errorf("budget %d: stopped at %d lines, but %d lines (%d tokens) fit", budget, n, n+1, more)
			}
		}
	}
}

func TestBM25KeepsTheBestLinesWithinBudget(t *testing.T) {
	s := laptopStep(t)
	docs := make([][]string, len(s.Tree.Lines))
	for i, l := range s.Tree.Lines {
		docs[i] = terms(s.Tree.Text[l.Start:l.End])
	}
	best := bm25Rank(docs, terms(s.Goal))[0]
	for _, budget := range budgets {
		sel, err := BM25{Budget: budget}.Select(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		keep := make([]bool, len(s.Tree.Lines))
		prev := 0
		for _, r := range sel.Ranges {
			if prev > 0 && r.From <= prev+1 || r.To < r.From || r.To > len(keep) {
				t.Fatalf("budget %d: ranges %v are not sorted, disjoint and apart", budget, sel.Ranges)
			}
			for i := r.From; i <= r.To; i++ {
				keep[i-1] = true
			}
			prev = r.To
		}
		used := 0
		for i, k := range keep {
			if k {
				used += s.LineTokens[i]
			}
		}
		switch {
		case !keep[0]:
			t.Errorf("budget %d: root line dropped", budget)
		case used > budget && used != s.LineTokens[0]:
			t.Errorf("budget %d: kept %d tokens", budget, used)
		case used+s.LineTokens[best] <= budget && !keep[best]:
			t.Errorf("budget %d: the best line %d was dropped", budget, best+1)
		}
		// The budget is filled: no dropped line would still fit.
		for i, k := range keep {
			if !k && used+s.LineTokens[i] <= budget {
				t.Errorf("budget %d: line %d (%d tokens) dropped with %d tokens to spare", budget, i+1, s.LineTokens[i], budget-used)
				break
			}
		}
	}
}

func TestKeptRanges(t *testing.T) {
	for _, tt := range []struct {
		keep []bool
		want []focusgate.Range
	}{
		{[]bool{true}, []focusgate.Range{{From: 1, To: 1}}},
		{[]bool{true, true, false, true, false, false, true, true}, []focusgate.Range{{From: 1, To: 2}, {From: 4, To: 4}, {From: 7, To: 8}}},
		{[]bool{false, false}, nil},
	} {
		if got := keptRanges(tt.keep); !slices.Equal(got, tt.want) {
			t.Errorf("keptRanges(%v) = %v, want %v", tt.keep, got, tt.want)
		}
	}
}

// The baselines' selections are valid for any tree detect accepts, and
// Apply takes them.
func FuzzBaselines(f *testing.F) {
	f.Add(readAXTree(f, "webarena-fmt_step-fewshot_gitlab_issues.txt"), "open my latest issue", 300)
	f.Add("RootWebArea 'x'\n\t[1] link 'a'\n\t[2] link 'b'\n\t[3] link 'c'\n\t\tStaticText 'c c c'\n\t[4] button 'd'\n\t[5] link 'e'\n\t[6] link 'f'\n", "c", 10)
	f.Add("- generic [ref=e1]:\n  - link \"a\" [ref=e2]\n  - link \"b\" [ref=e3]\n  - link \"c\" [ref=e4]\n  - text: x\n  - text: y\n  - text: z\n  - button \"go\" [ref=e5]\n", "go", 1)
	f.Fuzz(func(t *testing.T, text, goal string, budget int) {
		if len(detect.Blocks(text)) == 0 {
			return
		}
		s := newStep(t, text, goal)
		for _, st := range []Strategy{Truncate{Budget: budget}, BM25{Budget: budget}} {
			sel, err := st.Select(context.Background(), s)
			if err != nil {
				t.Fatalf("%s: %v", st.Name(), err)
			}
			if len(sel.Ranges) == 0 || sel.Ranges[0].From != 1 || sel.Ranges[len(sel.Ranges)-1].To > len(s.Tree.Lines) {
				t.Fatalf("%s: ranges %v for %d lines, want the root and nothing out of bounds", st.Name(), sel.Ranges, len(s.Tree.Lines))
			}
			used := 0
			for _, r := range sel.Ranges {
				for i := r.From; i <= r.To; i++ {
					used += s.LineTokens[i-1]
				}
			}
			if used > budget && used != s.LineTokens[0] {
				t.Fatalf("%s: %d tokens kept for a budget of %d", st.Name(), used, budget)
			}
			if _, err := prune.Apply(s.Tree, sel, focusgate.ModeAncestors); err != nil {
				t.Fatalf("%s: Apply: %v", st.Name(), err)
			}
		}
	})
}

// Strategies come in one order whatever the order they were named in, with a
// baseline per budget and the model's only when named.
func TestStrategiesFollowTheNames(t *testing.T) {
	llm := &LLM{}
	var got []string
	for _, s := range Strategies([]string{"bm25", "llm", "truncate"}, []int{500, 2000}, llm) {
		got = append(got, s.Name())
	}
	want := []string{"llm", "truncate@500", "truncate@2000", "bm25@500", "bm25@2000"}
	if !slices.Equal(got, want) {
		t.Errorf("strategies %v, want %v", got, want)
	}
	if n := len(Strategies([]string{"truncate"}, []int{100}, nil)); n != 1 {
		t.Errorf("%d strategies for one baseline and one budget", n)
	}
}
