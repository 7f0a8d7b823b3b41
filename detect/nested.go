package detect

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// The JSON layer sees through JSON string escaping: an agent that puts
// JSON.stringify(result.content) of an MCP tool call into its tool message
// sends `[{"type":"text","text":"### Snapshot\n```yaml\n- ..."}]` as the
// message's content, a JSON text inside a JSON string; Claude Code saves a
// multi-part result as a JSON file that the model reads back; Cline cuts the
// middle out of such a text, so that it no longer parses. Every string
// literal of a text that has lines enough to hold a tree is a view, even one
// whose closing quote (or opening, for the second half of a cut) is gone. A
// tree found in it is reported escaped once more (Observation.Nested), so
// that the gateway writes the pruned tree back escaped as often and the text
// still decodes to JSON whose string decodes to the pruned tree.

// inner is a tree found inside an escaped string of a segment's text.
type inner struct {
	block  Block  // offsets in text
	text   string // the decoded string that holds the tree
	at     span   // the tree in the segment's decoded text, escaped nested times
	nested int    // the JSON encodings between the segment's text and the tree, at least 1
}

// peelJSON returns a view of each JSON string literal of s that can hold a
// tree.
func peelJSON(s string) ([]view, []span) {
	if strings.Count(s, `\`) < MinLines-1 {
		return nil, nil
	}
	var views []view
	add := func(lit literal) {
		raw := s[lit.start:lit.end]
		if lit.newlines+lit.nested < MinLines-1 || lit.ids < MinIDLines && !hasIDCues([]byte(raw)) {
			return
		}
		views = append(views, view{text: unquote([]byte(raw)), from: lit.start, to: lit.end, lift: func(h hit) (hit, bool) {
			at := rawOffsets([]byte(raw), []int{h.at.start, h.at.end})
			h.at = span{lit.start + at[0], lit.start + at[1]}
			h.nested++
			return h, true
		}})
	}
	// The second half of a cut JSON text starts inside a string, on the
	// first line after the cut.
	i := len(s) - len(strings.TrimLeft(s, "\r\n"))
	if lit, next, ok := stringContent(s, i); ok && lit.newlines+lit.nested >= MinLines-1 {
		add(lit)
		i = next
	}
	for i < len(s) {
		q := strings.IndexByte(s[i:], '"')
		if q < 0 {
			break
		}
		q += i
		if !opensString(s, q) {
			i = q + 1
			continue
		}
		lit, next, ok := stringContent(s, q+1)
		if !ok {
			i = q + 1
			continue
		}
		add(lit)
		i = next
	}
	return views, nil
}

// opensString says whether the quote at s[q] can open a JSON string: it
// starts the text, or follows what comes before a value or a member name.
func opensString(s string, q int) bool {
	for p := q - 1; p >= 0; p-- {
		switch s[p] {
		case ' ', '\t', '\r', '\n':
			continue
		case '[', '{', ',', ':':
			return true
		}
		return false
	}
	return true
}

// stringContent reads JSON string content from s[i] to the closing quote,
// or, for a string that was cut, to the end of its line or of s (a partial
// escape at the cut left out). It returns the content with what the scan
// learned of it and the offset after it, or false at an invalid escape:
// then s[i:] is no JSON string.
func stringContent(s string, i int) (literal, int, bool) {
	lit := literal{start: i}
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			lit.end = i
			return lit, i + 1, true
		case c < 0x20:
			lit.end = i
			return lit, i, true
		case c == ']':
			if i > lit.start && (isLetter(s[i-1]) || isDigit(s[i-1])) {
				lit.ids++
			}
		case c == '\\':
			if i+1 >= len(s) || s[i+1] < 0x20 {
				// An escape cut in two: the string ends before it.
				lit.end = i
				return lit, i + 1, true
			}
			switch s[i+1] {
			case '\\':
				if i+2 < len(s) && s[i+2] == 'n' {
					lit.nested++
				}
			case '"', '/', 'b', 'f', 'r', 't':
			case 'n':
				lit.newlines++
			case 'u':
				if e := strings.IndexFunc(s[i+2:min(i+6, len(s))], func(r rune) bool { return r < 0x20 }); e >= 0 || i+6 > len(s) {
					lit.end = i
					next := len(s)
					if e >= 0 {
						next = i + 2 + e
					}
					return lit, next, true
				}
				r := hex4([]byte(s[i+2 : i+6]))
				if r < 0 {
					return lit, i, false
				}
				if r == '\n' {
					lit.newlines++
				}
				i += 6
				continue
			default:
				return lit, i, false
			}
			i += 2
			continue
		}
		i++
	}
	lit.end = len(s)
	return lit, len(s), true
}

// rawOffsets maps offsets of the decoded text of a string literal's content raw
// to offsets in raw, in one pass. The offsets must be sorted. Each escape and
// each invalid byte is measured by decoding it alone with unquote, so the
// mapping agrees with the decoded text by construction; an offset inside an
// escape maps to the escape's start.
func rawOffsets(raw []byte, offsets []int) []int {
	out := make([]int, len(offsets))
	k, d := 0, 0 // next offset to map; decoded length so far
	emit := func(i, width int, plain bool) {
		for ; k < len(offsets) && offsets[k] < d+width; k++ {
			out[k] = i
			if plain && offsets[k] > d {
				out[k] += offsets[k] - d
			}
		}
	}
	for i := 0; i < len(raw) && k < len(offsets); {
		if raw[i] != '\\' {
			j := bytes.IndexByte(raw[i:], '\\')
			if j < 0 {
				j = len(raw) - i
			}
			if run := raw[i : i+j]; utf8.Valid(run) {
				emit(i, j, true)
				i, d = i+j, d+j
				continue
			}
			_, size := utf8.DecodeRune(raw[i:])
			w := size
			if r, _ := utf8.DecodeRune(raw[i:]); r == utf8.RuneError && size == 1 {
				w = len(unquote(raw[i : i+1]))
			}
			emit(i, w, false)
			i, d = i+size, d+w
			continue
		}
		size := 2
		if raw[i+1] == 'u' {
			size = 6
			if r := hex4(raw[i+2 : i+6]); 0xd800 <= r && r < 0xdc00 && i+12 <= len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
				if lo := hex4(raw[i+8 : i+12]); 0xdc00 <= lo && lo < 0xe000 {
					size = 12
				}
			}
		}
		w := len(unquote(raw[i : i+size]))
		emit(i, w, false)
		i, d = i+size, d+w
	}
	for ; k < len(offsets); k++ {
		out[k] = len(raw)
	}
	return out
}
