// Package pricing knows what models cost, so that focusgate can tell whether
// pruning pays and how much it saved. Prices are list prices in US dollars
// per million tokens; a built-in table covers common OpenAI, Anthropic and
// Gemini models and users override or extend it with their own (negotiated rates,
// other providers).
package pricing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/focusgate/focusgate"
)

// defaults are the list prices of every provider's declaration
// (focusgate.Providers), for standard (non-batch, uncached) input and
// output. They change; users with other rates set their own.
var defaults = func() map[string]focusgate.Price {
	m := map[string]focusgate.Price{}
	for _, p := range focusgate.Providers {
		maps.Copy(m, p.Prices)
	}
	return m
}()

// Table maps model names to prices. The zero value knows no model.
type Table struct {
	prices map[string]focusgate.Price
}

// Default returns the built-in table.
func Default() *Table {
	return &Table{prices: maps.Clone(defaults)}
}

// Override returns a copy of t with the prices in a JSON object such as
// {"gpt-4.1": {"input": 2, "output": 8}} added or replaced.
func (t *Table) Override(data []byte) (*Table, error) {
	var extra map[string]focusgate.Price
	if err := json.Unmarshal(data, &extra); err != nil {
		return nil, fmt.Errorf("want a JSON object of {\"model\": {\"input\": USD, \"output\": USD}} per million tokens: %w", jsonProblem(data, err))
	}
	out := &Table{prices: maps.Clone(t.prices)}
	if out.prices == nil {
		out.prices = map[string]focusgate.Price{}
	}
	for model, p := range extra {
		if p.Input < 0 || p.Output < 0 {
			return nil, fmt.Errorf("the price of %q is negative", model)
		}
		out.prices[focusgate.BaseModel(model)] = p
	}
	return out, nil
}

// jsonProblem says in words what is wrong with a JSON text that did not
// decode, without the decoder's Go types: where the syntax breaks, or which
// value is of the wrong kind.
func jsonProblem(data []byte, err error) error {
	var syntax *json.SyntaxError
	var kind *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("not valid JSON at byte %d", syntax.Offset)
	case errors.As(err, &kind) && kind.Field != "":
		return fmt.Errorf("%s is a JSON %s, want a %s", kind.Field, kind.Value, jsonKind(kind.Type.Kind()))
	case errors.As(err, &kind):
		return fmt.Errorf("a JSON %s where a %s is wanted", kind.Value, jsonKind(kind.Type.Kind()))
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("empty")
	}
	return errors.New("not valid JSON")
}

func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Map, reflect.Struct:
		return "JSON object"
	case reflect.Float64, reflect.Int:
		return "number"
	}
	return k.String()
}

// Models lists the models of the table, sorted.
func (t *Table) Models() []string {
	return slices.Sorted(maps.Keys(t.prices))
}

// undated is model without its snapshot suffix, "-YYYY-MM-DD" or "-NNNN"
// (gpt-4.1-2025-04-14, gpt-4-0613, o3-mini-2025-01-31). It looks at the
// last bytes only: the regular expression it replaces cost microseconds on
// every inspected request.
func undated(model string) string {
	if n := len(model) - len("-2025-04-14"); n >= 0 && fixed(model[n:], "-dddd-dd-dd") {
		return model[:n]
	}
	if n := len(model) - len("-0613"); n >= 0 && fixed(model[n:], "-dddd") {
		return model[:n]
	}
	return model
}

// fixed says whether s has the shape of pattern, whose "d"s stand for any
// ASCII digit and whose other bytes for themselves.
func fixed(s, pattern string) bool {
	for i := range len(pattern) {
		if pattern[i] == 'd' {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		} else if s[i] != pattern[i] {
			return false
		}
	}
	return true
}

// Lookup finds a model's price. Provider prefixes ("openai/gpt-4.1") and
// snapshot dates ("gpt-4.1-2025-04-14") are ignored, and a name extending a
// known one after a dash ("gpt-4o-mini-search-preview") takes the longest
// such known name's price.
func (t *Table) Lookup(model string) (focusgate.Price, bool) {
	return lookup(t.prices, model)
}

// maxModelBytes is the longest model name looked up.
const maxModelBytes = 256

// lookup finds model in a table keyed by base model names, as Table.Lookup
// describes.
func lookup[V any](table map[string]V, model string) (V, bool) {
	if len(model) > maxModelBytes {
		// No model is called that: a name this long is a client's
		// invention, and trimming it dash by dash would cost time in
		// proportion to its length squared.
		var zero V
		return zero, false
	}
	m := focusgate.BaseModel(model)
	if v, ok := table[m]; ok {
		return v, true
	}
	m = undated(m)
	for {
		if v, ok := table[m]; ok {
			return v, true
		}
		i := strings.LastIndexByte(m, '-')
		if i <= 0 {
			var zero V
			return zero, false
		}
		m = m[:i]
	}
}

// BreakEven is the share of an observation's tokens that pruning must remove
// for the retriever's reading of the observation to cost no more than the
// action-model input it saves (the LineRetriever paper's appendix: with $0.40
// against $2 per million input tokens, anything above 20% saves money). It is
// false when either price is unknown or the action model's input is free.
func BreakEven(retriever, action focusgate.Price) (float64, bool) {
	if action.Input <= 0 {
		return 0, false
	}
	return retriever.Input / action.Input, true
}
