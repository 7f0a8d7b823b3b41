package detect

import (
	"strings"
)

// The JSON layer sees through JSON string escaping: an agent that puts
// JSON.stringify(result.content) of an MCP tool call into its tool message
// sends `[{"type":"text","text":"### Snapshot\n```yaml\n- ..."}]` as the
// message's content, a JSON text inside a JSON string; Claude Code saves a
// multi-part result as a JSON file that the model reads back; Cline cuts the
// middle out of such a text, so that it no longer parses. Every string
// literal of a text that has lines enough to hold a tree is a view, even one
// whose closing quote (or opening, for the second half of a cut) is gone. A
// tree found in it is placed in the literal as the client escaped it, so
// that its kept lines go back with the client's own escapes (`\u00e9`, `\/`),
// and text written in its place is escaped once more (Observation.Nested),
// so that the text still decodes to JSON whose string decodes to the pruned
// tree.

// peelJSON returns a view of each JSON string literal of s that can hold a
// tree.
func peelJSON(s string) ([]view, []span) {
	if strings.Count(s, `\`) < MinLines-1 {
		return nil, nil
	}
	var views []view
	add := func(lit literal) {
		raw := s[lit.start:lit.end]
		if lit.newlines+lit.nested < MinLines-1 || lit.ids < MinIDLines && !hasIDCues(raw) {
			return
		}
		views = append(views, view{text: unquote(raw), from: lit.start, to: lit.end})
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

// wrapJSON places the trees found in a string literal's decoded text in
// the literal, escaped as the client escaped them, in one pass over it, and
// counts one more encoding for the text written in their place.
func wrapJSON(s string, v view, hits []hit) []hit {
	placeEscaped(s[v.from:v.to], v.from, hits)
	for i := range hits {
		hits[i].nested++
	}
	return hits
}

// placeEscaped moves the places of hits, trees in text order in the text
// that raw, a string literal's content, decodes to, onto raw, and then by
// base: one cursor walks raw once for all of them.
func placeEscaped(raw string, base int, hits []hit) {
	c := newCursor(raw)
	for _, h := range hits {
		for k := range h.places {
			p := &h.places[k]
			p.start = base + c.at(p.start)
			p.own = base + c.at(p.own)
			p.end = base + c.at(p.end)
		}
	}
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
