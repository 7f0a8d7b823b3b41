package pricing

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/focusgate/focusgate"
)

// defaultWindows are the context windows, in tokens, of the common models
// of OpenAI, Anthropic and Google: the most a request may hold, prompt and
// answer together, before the provider refuses it. A request whose estimate
// exceeds its model's window has every page pruned before it is sent (see
// pipeline). Claude's 1M-token window is a beta a client asks for with a
// header, so the table gives Claude the 200k every client has; a team on the
// beta raises it with FOCUSGATE_CONTEXT_WINDOWS.
var defaultWindows = map[string]int{
	"gpt-5":                 400_000,
	"gpt-5-mini":            400_000,
	"gpt-5-nano":            400_000,
	"gpt-4.1":               1_047_576,
	"gpt-4.1-mini":          1_047_576,
	"gpt-4.1-nano":          1_047_576,
	"gpt-4.5":               128_000,
	"gpt-4o":                128_000,
	"gpt-4o-mini":           128_000,
	"o1":                    200_000,
	"o1-mini":               128_000,
	"o3":                    200_000,
	"o3-mini":               200_000,
	"o4-mini":               200_000,
	"gpt-4-turbo":           128_000,
	"gpt-4":                 8_192,
	"gpt-3.5-turbo":         16_385,
	"claude-opus-4":         200_000,
	"claude-sonnet-4":       200_000,
	"claude-haiku-4":        200_000,
	"claude-3-7-sonnet":     200_000,
	"claude-3-5-sonnet":     200_000,
	"claude-3-5-haiku":      200_000,
	"claude-3-haiku":        200_000,
	"gemini-1.5-pro":        2_097_152,
	"gemini-1.5-flash":      1_048_576,
	"gemini-2.0-flash":      1_048_576,
	"gemini-2.0-flash-lite": 1_048_576,
	"gemini-2.5-pro":        1_048_576,
	"gemini-2.5-flash":      1_048_576,
	"gemini-2.5-flash-lite": 1_048_576,
	"gemini-3-pro":          1_048_576,
	"gemini-3-flash":        1_048_576,
}

// Windows maps model names to their context windows in tokens. The zero
// value knows no model.
type Windows struct {
	tokens map[string]int
}

// DefaultWindows returns the built-in table.
func DefaultWindows() *Windows {
	return &Windows{tokens: maps.Clone(defaultWindows)}
}

// Override returns a copy of w with the windows in a JSON object such as
// {"claude-sonnet-4-5": 1000000} added or replaced.
func (w *Windows) Override(data []byte) (*Windows, error) {
	var extra map[string]int
	if err := json.Unmarshal(data, &extra); err != nil {
		return nil, fmt.Errorf("pricing: want a JSON object of {\"model\": tokens}: %w", err)
	}
	out := &Windows{tokens: maps.Clone(w.tokens)}
	if out.tokens == nil {
		out.tokens = map[string]int{}
	}
	for model, n := range extra {
		if n <= 0 {
			return nil, fmt.Errorf("pricing: context window of %q must be positive, not %d", model, n)
		}
		out.tokens[focusgate.BaseModel(model)] = n
	}
	return out, nil
}

// Lookup finds a model's context window, reading the name as Table.Lookup
// does: provider prefix and snapshot date ignored, and a name extending a
// known one after a dash ("claude-sonnet-4-5-20250929",
// "gemini-2.5-flash-preview-05-20") taking that name's window.
func (w *Windows) Lookup(model string) (int, bool) {
	if w == nil {
		return 0, false
	}
	return lookup(w.tokens, model)
}
