package pipeline

import (
	"bytes"
	"cmp"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf8"
)

// edit replaces body[start:end], the escaped content of part of a JSON
// string literal, with text.
type edit struct {
	start, end int
	text       string
	// nested is detect.Observation.Nested: how many JSON encodings lie between
	// the body's string and the text, each of which the text must get too.
	nested int
	// lines, when set, gives the escaped form each line of the replaced
	// text had (see detect.Observation.RawLines): a line of text that was
	// one of them goes back as it came.
	lines func() (text string, lines []string, newline string, ok bool)
}

// splice applies non-overlapping edits to body and returns the new body. Bytes
// outside the edits are copied as they are, so everything focusgate did not
// prune reaches the upstream exactly as the client sent it.
func splice(body []byte, edits []edit) []byte {
	slices.SortFunc(edits, func(a, b edit) int { return cmp.Compare(a.start, b.start) })
	size := len(body)
	for _, e := range edits {
		size += len(e.text) + len(e.text)/8 - (e.end - e.start)
	}
	out := make([]byte, 0, max(size, 0))
	prev := 0
	for _, e := range edits {
		out = append(out, body[prev:e.start]...)
		out = appendKeepingEscapes(out, body[e.start:e.end], e)
		prev = e.end
	}
	return append(out, body[prev:]...)
}

// appendKeepingEscapes appends e.text escaped for the place of raw, the
// bytes it replaces: the lines that raw held go back with their own escapes
// (a client that writes `\u00e9` or `\/` gets them back on every line it
// keeps), and the rest, markers and stubs, is escaped as
// appendNestedJSONStringContent does. Most clients escape as that function
// does, and then the whole text is written with it at once.
func appendKeepingEscapes(dst, raw []byte, e edit) []byte {
	if e.lines == nil || !unusualEscapes(raw) {
		return appendNestedJSONStringContent(dst, e.text, e.nested)
	}
	orig, lines, newline, ok := e.lines()
	if !ok || bytes.Equal(appendNestedJSONStringContent(nil, orig, e.nested), raw) {
		return appendNestedJSONStringContent(dst, e.text, e.nested)
	}
	own := make(map[string]string, len(lines))
	for k, line := range strings.Split(orig, "\n") {
		if _, dup := own[line]; !dup {
			own[line] = lines[k]
		}
	}
	for k, line := range strings.Split(e.text, "\n") {
		if k > 0 {
			dst = append(dst, newline...)
		}
		if r, ok := own[line]; ok {
			dst = append(dst, r...)
		} else {
			dst = appendNestedJSONStringContent(dst, line, e.nested)
		}
	}
	return dst
}

// unusualEscapes says whether raw may hold an escape that
// appendJSONStringContent would not write: `\/`, `\b`, `\f`, a `\u` escape
// of a character it writes as it is, or a raw U+2028 or U+2029. At every
// nesting level such an escape shows as one of these byte strings.
func unusualEscapes(raw []byte) bool {
	for i := 0; ; i++ {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 || i+j+1 >= len(raw) {
			break
		}
		i += j
		switch raw[i+1] {
		case '/', 'b', 'f', 'u':
			return true
		}
	}
	return bytes.Contains(raw, []byte("\u2028")) || bytes.Contains(raw, []byte("\u2029"))
}

// appendNestedJSONStringContent appends s escaped for a JSON string nested
// levels deeper than the body's own: once for the JSON text that holds it
// (a tool result passed through JSON.stringify), then once more for each
// string around that. The JSON text is escaped the way the body is, so the
// body's string still decodes to valid JSON whose string decodes to s.
func appendNestedJSONStringContent(dst []byte, s string, nested int) []byte {
	for range nested {
		s = string(appendJSONStringContent(nil, s))
	}
	return appendJSONStringContent(dst, s)
}

const hexDigits = "0123456789abcdef"

// appendJSONStringContent appends s escaped for the inside of a JSON string
// literal. Unlike encoding/json it leaves <, > and & alone: the text goes to a
// model, not into HTML, and escaping them would only cost tokens. It is the
// inverse of detect's decoding, so that kept lines leave as they came: invalid
// UTF-8 is written back as the raw bytes it was, and the three bytes detect
// makes of a lone escaped surrogate (ED A0..BF 80..BF) become that escape
// again, in lower-case hex as JavaScript and Python write it.
func appendJSONStringContent(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		if i = skipPlain(s, i); i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			if c == 0xed && i+2 < len(s) && s[i+1]&0xe0 == 0xa0 && s[i+2]&0xc0 == 0x80 {
				dst = append(dst, s[start:i]...)
				u := 0xd000 | rune(s[i+1]&0x3f)<<6 | rune(s[i+2]&0x3f)
				dst = append(dst, '\\', 'u', hexDigits[u>>12], hexDigits[u>>8&0xf], hexDigits[u>>4&0xf], hexDigits[u&0xf])
				i += 3
				start = i
				continue
			}
			i++ // an invalid byte goes out raw, as it came in
			continue
		}
		// U+2028 and U+2029 are valid JSON but end lines in JavaScript;
		// encoding/json escapes them, and so do we.
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// skipPlain returns the offset of the first byte at or after i, among whole
// words of eight, that may need escaping: a control byte, a quote, a
// backslash or a byte of a multi-byte character. A page's lines are long runs
// of such plain bytes.
func skipPlain(s string, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		q, bs := x^(ones*'"'), x^(ones*'\\')
		// Each term sets the high bit of a byte that needs a look; the lowest
		// bit set is exact, borrows only disturb higher bytes.
		if m := ((x-ones*0x20)&^x | (q-ones)&^q | (bs-ones)&^bs | x) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	return i
}
