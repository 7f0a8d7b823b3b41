package detect

import (
	"github.com/focusgate/focusgate/internal/memo"
)

// headBytes is how much of a string's start the Finder's memory files it
// under. An agent sends every page again in each later request, so a string
// of a body is looked for in the memory where it starts, before its end is
// known: one comparison with what was remembered then both reads the string
// and recognises it. Finding its closing quote first, then hashing it whole
// as a key and comparing it, went over the page's bytes three times.
const headBytes = 512

// maxSameHead bounds the strings remembered under one head. Snapshots of one
// site in one conversation can begin alike for longer than a head; a look-up
// checks each candidate's length, closing quote and last bytes before it
// compares the rest, so a long list costs little.
const maxSameHead = 256

// maxCompares bounds the candidates of one look-up whose bytes are compared
// whole: strings planted to share a head, a length and an ending with a page
// would otherwise make each look-up of it compare the page hundreds of times.
// A string not found within the bound is read and searched as a new one, and
// put first among its head's.
const maxCompares = 3

// tailBytes is how much of a candidate's end is compared before the rest:
// pages that begin alike mostly end differently.
const tailBytes = 32

// recall is a string the Finder remembers: its bytes as the body holds them
// (escaped), and what searching it found.
type recall struct {
	raw string
	searched
	size int // what it holds, for the memory's budget
}

// strMemory is the Finder's memory of the strings it searched, filed by
// their heads. A nil *strMemory remembers nothing.
type strMemory struct {
	m *memo.Memo[[]recall]
	// perHead bounds the bytes the strings under one head hold together:
	// the memory does not keep a value larger than one generation.
	perHead int
}

func newStrMemory(maxBytes int) *strMemory {
	m := memo.New[[]recall](maxBytes)
	if m == nil {
		return nil
	}
	return &strMemory{m: m, perHead: maxBytes / 4}
}

func head(raw []byte) []byte {
	return raw[:min(len(raw), headBytes)]
}

// at returns what is remembered of the string whose content starts at
// b[start], and the offset of its closing quote. It looks only for strings
// longer than a head, whose end the head does not hold. A remembered string
// followed by a quote in b is the string there: what was remembered was a
// whole string's content, whose last quote no backslash escapes, so the
// same bytes followed by a quote close the same way.
func (s *strMemory) at(b []byte, start int) (searched, int, bool) {
	if s == nil || len(b)-start <= headBytes {
		return searched{}, 0, false
	}
	list, _ := s.m.GetBytes(b[start : start+headBytes])
	compares := 0
	for i := range list {
		r := &list[i]
		end := start + len(r.raw)
		if end >= len(b) || b[end] != '"' || !sameTail(b[start:end], r.raw) {
			continue
		}
		if string(b[start:end]) == r.raw {
			return r.searched, end, true
		}
		if compares++; compares == maxCompares {
			break
		}
	}
	return searched{}, 0, false
}

// get returns what is remembered of the string whose content is raw.
func (s *strMemory) get(raw []byte) (searched, bool) {
	if s == nil {
		return searched{}, false
	}
	list, _ := s.m.GetBytes(head(raw))
	compares := 0
	for i := range list {
		r := &list[i]
		if len(r.raw) != len(raw) || !sameTail(raw, r.raw) {
			continue
		}
		if r.raw == string(raw) {
			return r.searched, true
		}
		if compares++; compares == maxCompares {
			break
		}
	}
	return searched{}, false
}

// sameTail reports whether b and raw, of one length, end alike.
func sameTail(b []byte, raw string) bool {
	n := max(len(raw)-tailBytes, 0)
	return string(b[n:]) == raw[n:]
}

// put remembers what searching the string raw found; size is what that
// holds beyond raw. It goes first among the strings of its head, and the
// oldest put give way to it.
func (s *strMemory) put(raw []byte, v searched, size int) {
	if s == nil {
		return
	}
	r := recall{raw: string(raw), searched: v, size: len(raw) + size + memo.EntryOverhead}
	if r.size > s.perHead {
		return
	}
	s.m.Update(head(raw), func(list []recall, _ bool) ([]recall, int) {
		// Callers share the list they got: it is copied, never changed.
		kept := make([]recall, 1, min(len(list)+1, maxSameHead))
		kept[0] = r
		total, compares := r.size, 0
		for _, o := range list {
			if len(kept) == cap(kept) || total+o.size > s.perHead {
				break
			}
			if compares < maxCompares && len(o.raw) == len(raw) && sameTail(raw, o.raw) {
				if compares++; o.raw == r.raw {
					continue // the string put again
				}
			}
			kept = append(kept, o)
			total += o.size
		}
		return kept, total
	})
}
