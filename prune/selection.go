package prune

import (
	"bytes"

	"github.com/focusgate/focusgate"
)

// readSelection reads raw when it is a Selection exactly as json.Marshal
// writes one: {"ranges":[{"From":1,"To":3},...],"flagged":[4,...],"usage":
// {"prompt_tokens":n,"completion_tokens":n}}, with "ranges" null when there
// are none and "flagged" left out. It reports false for anything else, which
// encoding/json then reads: what it accepts, it reads as encoding/json does.
func readSelection(raw []byte) (Selection, bool) {
	r := selectionReader{b: raw}
	var sel Selection
	if !r.word(`{"ranges":`) {
		return sel, false
	}
	if !r.word("null") {
		if !r.word("[") {
			return sel, false
		}
		// Every range is an object, and so are the selection and its usage.
		sel.Ranges = make([]focusgate.Range, 0, max(bytes.Count(raw, []byte("{"))-2, 0))
		for first := true; !r.word("]"); first = false {
			var rg focusgate.Range
			if !first && !r.word(",") || !r.word(`{"From":`) || !r.int(&rg.From) || !r.word(`,"To":`) || !r.int(&rg.To) || !r.word("}") {
				return sel, false
			}
			sel.Ranges = append(sel.Ranges, rg)
		}
	}
	if r.word(`,"flagged":[`) {
		for first := true; !r.word("]"); first = false {
			var n int
			if !first && !r.word(",") || !r.int(&n) {
				return sel, false
			}
			sel.Flagged = append(sel.Flagged, n)
		}
		if len(sel.Flagged) == 0 {
			return sel, false // json.Marshal leaves an empty list out
		}
	}
	ok := r.word(`,"usage":{"prompt_tokens":`) && r.int(&sel.Usage.PromptTokens) &&
		r.word(`,"completion_tokens":`) && r.int(&sel.Usage.CompletionTokens) && r.word("}}") && r.at == len(raw)
	return sel, ok
}

// selectionReader reads the bytes of a selection in order.
type selectionReader struct {
	b  []byte
	at int
}

// word consumes w when it comes next.
func (r *selectionReader) word(w string) bool {
	if len(r.b)-r.at < len(w) || string(r.b[r.at:r.at+len(w)]) != w {
		return false
	}
	r.at += len(w)
	return true
}

// int consumes a number as json.Marshal writes an int: an optional minus
// and digits without a leading zero, within the range of an int32 so that
// it cannot overflow.
func (r *selectionReader) int(n *int) bool {
	neg := r.word("-")
	start, v := r.at, 0
	for r.at < len(r.b) && '0' <= r.b[r.at] && r.b[r.at] <= '9' && r.at-start < 10 {
		v = v*10 + int(r.b[r.at]-'0')
		r.at++
	}
	digits := r.at - start
	if digits == 0 || digits > 1 && r.b[start] == '0' || digits == 10 || r.at < len(r.b) && '0' <= r.b[r.at] && r.b[r.at] <= '9' || neg && v == 0 {
		return false
	}
	if neg {
		v = -v
	}
	*n = v
	return true
}
