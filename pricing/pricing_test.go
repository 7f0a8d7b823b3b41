package pricing_test

import (
	"math"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/pricing"
)

func TestLookup(t *testing.T) {
	table := pricing.Default()
	tests := []struct {
		model string
		want  focusgate.Price
		ok    bool
	}{
		{"gpt-4.1", focusgate.Price{Input: 2, Output: 8}, true},
		{"gpt-4.1-2025-04-14", focusgate.Price{Input: 2, Output: 8}, true},
		{"gpt-4.1-mini", focusgate.Price{Input: 0.4, Output: 1.6}, true},
		{"gpt-4.1-mini-2025-04-14", focusgate.Price{Input: 0.4, Output: 1.6}, true},
		{"openai/gpt-4o-mini", focusgate.Price{Input: 0.15, Output: 0.6}, true},
		{"GPT-4o-2024-08-06", focusgate.Price{Input: 2.5, Output: 10}, true},
		{"gpt-4o-mini-search-preview", focusgate.Price{Input: 0.15, Output: 0.6}, true},
		{"gpt-4-0613", focusgate.Price{Input: 30, Output: 60}, true},
		{"o3-mini-2025-01-31", focusgate.Price{Input: 1.1, Output: 4.4}, true},
		{"gemini-2.5-pro", focusgate.Price{Input: 1.25, Output: 10}, true},
		{"models/gemini-2.5-flash", focusgate.Price{Input: 0.3, Output: 2.5}, true},
		{"gemini-2.5-flash-lite", focusgate.Price{Input: 0.1, Output: 0.4}, true},
		{"gemini-2.5-flash-preview-09-2025", focusgate.Price{Input: 0.3, Output: 2.5}, true},
		{"gemini-3-pro-preview", focusgate.Price{Input: 2, Output: 12}, true},
		{"gemini-3-flash-preview", focusgate.Price{Input: 0.5, Output: 3}, true},
		{"gemini-1.0-ultra", focusgate.Price{}, false},
		{"llama3", focusgate.Price{}, false},
		{"", focusgate.Price{}, false},
	}
	for _, tt := range tests {
		got, ok := table.Lookup(tt.model)
		if ok != tt.ok || got != tt.want {
			t.Errorf("Lookup(%q) = %v, %v; want %v, %v", tt.model, got, ok, tt.want, tt.ok)
		}
	}
}

func TestOverride(t *testing.T) {
	table, err := pricing.Default().Override([]byte(`{"gpt-4.1": {"input": 1, "output": 4}, "Qwen/Qwen3-32B": {"input": 0.1, "output": 0.3}}`))
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := table.Lookup("gpt-4.1-2025-04-14"); p != (focusgate.Price{Input: 1, Output: 4}) {
		t.Errorf("override not applied: %v", p)
	}
	if p, ok := table.Lookup("qwen3-32b"); !ok || p.Input != 0.1 {
		t.Errorf("new model not added: %v %v", p, ok)
	}
	if p, _ := pricing.Default().Lookup("gpt-4.1"); p.Input != 2 {
		t.Error("Override changed the default table")
	}
	for _, bad := range []string{`[1,2]`, `{"m": {"input": -1}}`, `not json`} {
		if _, err := pricing.Default().Override([]byte(bad)); err == nil {
			t.Errorf("Override(%s) accepted", bad)
		}
	}
}

func TestBreakEvenAndCost(t *testing.T) {
	mini, _ := pricing.Default().Lookup("gpt-4.1-mini")
	full, _ := pricing.Default().Lookup("gpt-4.1")
	if be, ok := pricing.BreakEven(mini, full); !ok || math.Abs(be-0.2) > 1e-9 {
		t.Errorf("gpt-4.1-mini for gpt-4.1: break-even %v, want 0.2 (the paper's 20%%)", be)
	}
	if be, _ := pricing.BreakEven(full, full); be != 1 {
		t.Errorf("same model: break-even %v, want 1: pruning can never pay", be)
	}
	if _, ok := pricing.BreakEven(mini, focusgate.Price{}); ok {
		t.Error("a free action model has no break-even")
	}
	if c := full.Cost(1_000_000, 500_000); c != 6 {
		t.Errorf("cost %v, want $2 + $4", c)
	}
}

func TestClaudePrices(t *testing.T) {
	tab := pricing.Default()
	for model, want := range map[string]focusgate.Price{
		"claude-sonnet-4-5-20250929": {Input: 3, Output: 15},
		"anthropic/claude-haiku-4-5": {Input: 1, Output: 5},
		"claude-opus-4-6":            {Input: 15, Output: 75},
		"claude-3-5-haiku-latest":    {Input: 0.80, Output: 4},
	} {
		if got, ok := tab.Lookup(model); !ok || got != want {
			t.Errorf("%s: %v %v, want %v", model, got, ok, want)
		}
	}
	// A Claude Haiku retriever in front of Sonnet pays from a third of
	// the tokens removed.
	h, _ := tab.Lookup("claude-haiku-4-5")
	s, _ := tab.Lookup("claude-sonnet-4-5")
	if be, _ := pricing.BreakEven(h, s); be < 0.33 || be > 0.34 {
		t.Errorf("break-even %v, want 1/3", be)
	}
}

// A client's megabyte-long model name costs no more to look up than a
// short one: it is known to be no model at once.
func TestALongModelNameIsNoModel(t *testing.T) {
	long := strings.Repeat("gpt-4.1-", 1<<17)
	if _, ok := pricing.Default().Lookup(long); ok {
		t.Error("a megabyte-long name has a price")
	}
	if _, ok := pricing.DefaultWindows().Lookup(long); ok {
		t.Error("a megabyte-long name has a window")
	}
}
