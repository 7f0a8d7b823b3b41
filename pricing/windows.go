package pricing

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/focusgate/focusgate"
)

// defaultWindows are the context windows, in tokens, of every provider's
// declaration (focusgate.Providers): the most a request may hold, prompt and
// answer together, before the provider refuses it. A request whose estimate
// exceeds its model's window has every page pruned before it is sent (see
// pipeline).
var defaultWindows = func() map[string]int {
	m := map[string]int{}
	for _, p := range focusgate.Providers {
		maps.Copy(m, p.Windows)
	}
	return m
}()

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
		return nil, fmt.Errorf("want a JSON object of {\"model\": tokens}: %w", jsonProblem(data, err))
	}
	out := &Windows{tokens: maps.Clone(w.tokens)}
	if out.tokens == nil {
		out.tokens = map[string]int{}
	}
	for model, n := range extra {
		if n <= 0 {
			return nil, fmt.Errorf("the context window of %q must be positive, not %d", model, n)
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
