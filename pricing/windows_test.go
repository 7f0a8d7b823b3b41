package pricing_test

import (
	"testing"

	"github.com/focusgate/focusgate/pricing"
)

func TestContextWindows(t *testing.T) {
	w, err := pricing.DefaultWindows().Override([]byte(`{"claude-sonnet-4-5": 1000000, "my-model": 32000}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		model string
		want  int
		known bool
	}{
		{"gpt-4.1", 1_047_576, true},
		{"openai/gpt-4o-2024-08-06", 128_000, true},
		{"claude-sonnet-4-20250514", 200_000, true},
		{"claude-sonnet-4-5-20250929", 1_000_000, true}, // the override, not the family
		{"claude-opus-4-1", 200_000, true},
		{"gemini-2.5-flash-preview-05-20", 1_048_576, true},
		{"models/gemini-2.5-pro", 1_048_576, true},
		{"my-model", 32_000, true},
		{"llama-3-70b", 0, false},
	}
	for _, tt := range tests {
		got, ok := w.Lookup(tt.model)
		if got != tt.want || ok != tt.known {
			t.Errorf("Lookup(%q) = %d, %v; want %d, %v", tt.model, got, ok, tt.want, tt.known)
		}
	}
	if _, ok := pricing.DefaultWindows().Lookup("claude-sonnet-4-5"); !ok {
		t.Error("the override changed the built-in table")
	}
	for _, bad := range []string{`{"m": 0}`, `{"m": -5}`, `{"m": "big"}`, `[]`} {
		if _, err := pricing.DefaultWindows().Override([]byte(bad)); err == nil {
			t.Errorf("Override(%s) accepted", bad)
		}
	}
	var none *pricing.Windows
	if _, ok := none.Lookup("gpt-4.1"); ok {
		t.Error("a nil table knows a window")
	}
}
