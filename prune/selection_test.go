package prune

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/focusgate/focusgate"
)

// The selections the cache holds are read by hand exactly as encoding/json
// reads them, and whatever else reaches the reader is left to encoding/json.
func TestReadSelection(t *testing.T) {
	for _, sel := range []Selection{
		{},
		{Ranges: []focusgate.Range{{From: 1, To: 3}, {From: 11, To: 13}}, Usage: focusgate.RetrieverUsage{PromptTokens: 52000, CompletionTokens: 900}},
		{Ranges: []focusgate.Range{{From: 4, To: 2}, {From: -5, To: 0}}, Flagged: []int{4, 13}},
		{Ranges: []focusgate.Range{}},
		{Flagged: []int{1}},
	} {
		raw, err := json.Marshal(sel)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := readSelection(raw)
		var want Selection
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: read %+v (%v), want %+v", raw, got, ok, want)
		}
	}
	for _, raw := range []string{
		`{"ranges":[{"From":1,"To":3}],"usage":{"prompt_tokens":1,"completion_tokens":2}} `,
		`{"ranges":[{"To":3,"From":1}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`{"ranges":[{"From":01,"To":3}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`{"ranges":[{"From":1,"To":99999999999}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`{"ranges":[{"From":1,"To":3},],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`{"ranges":[],"flagged":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`{"ranges":null,"usage":{"prompt_tokens":-0,"completion_tokens":2}}`,
		`{"ranges":null}`,
		``,
	} {
		if sel, ok := readSelection([]byte(raw)); ok {
			t.Errorf("%s: read as %+v, want it left to encoding/json", raw, sel)
		}
	}
}

// Whatever the bytes, what readSelection reads is what encoding/json reads.
func FuzzReadSelection(f *testing.F) {
	f.Add([]byte(`{"ranges":[{"From":1,"To":3},{"From":11,"To":13}],"flagged":[4],"usage":{"prompt_tokens":5,"completion_tokens":0}}`))
	f.Add([]byte(`{"ranges":null,"usage":{"prompt_tokens":0,"completion_tokens":0}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := readSelection(raw)
		if !ok {
			return
		}
		var want Selection
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("%s: read as %+v, which encoding/json refuses: %v", raw, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: read as %+v, encoding/json reads %+v", raw, got, want)
		}
	})
}
