package pricing

import (
	"regexp"
	"testing"
)

// datedSuffix is the regular expression undated replaced, kept as its
// specification.
var datedSuffix = regexp.MustCompile(`-(\d{4}-\d{2}-\d{2}|\d{4})$`)

func TestUndated(t *testing.T) {
	tests := []struct{ model, want string }{
		{"gpt-4.1-2025-04-14", "gpt-4.1"},
		{"gpt-4-0613", "gpt-4"},
		{"o3-mini-2025-01-31", "o3-mini"},
		{"gpt-4.1", "gpt-4.1"},
		{"claude-sonnet-4-20250514", "claude-sonnet-4-20250514"}, // eight digits: not a snapshot suffix
		{"x-2024-01-01-2024", "x-2024-01-01"},                    // only the last suffix
		{"-2025-04-14", ""},
		{"-0613", ""},
		{"0613", "0613"},
		{"gpt-4-06x3", "gpt-4-06x3"},
		{"gpt-4.1-2025-04-1x", "gpt-4.1-2025-04-1x"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := undated(tt.model); got != tt.want {
			t.Errorf("undated(%q) = %q, want %q", tt.model, got, tt.want)
		}
		if spec := datedSuffix.ReplaceAllString(tt.model, ""); spec != tt.want {
			t.Errorf("the expression makes %q of %q, the table %q", spec, tt.model, tt.want)
		}
	}
}

func FuzzUndated(f *testing.F) {
	for _, s := range []string{"gpt-4.1-2025-04-14", "gpt-4-0613", "a-1234-12-1", "-1234", "x-2024-01-01-2024", "٣-1234"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, model string) {
		if got, want := undated(model), datedSuffix.ReplaceAllString(model, ""); got != want {
			t.Errorf("undated(%q) = %q, the expression gives %q", model, got, want)
		}
	})
}
