package detect

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is a small validating JSON reader. It walks a body once, descends only
// into the members detect cares about and reports string literals as raw byte spans,
// so that nothing is decoded unless it may hold a tree. A general-purpose library
// would decode every string it visits.

// maxNesting bounds the reader's recursion; it is encoding/json's limit too.
const maxNesting = 10000

// literal is a JSON string literal in the body: the span of its content without the
// quotes, and what a cheap scan learned about it.
type literal struct {
	start, end int
	newlines   int // "\n" and "\u000a" escapes
	nested     int // "\\n": a "\n" escape of a JSON text held in this string
	ids        int // ']' right after a letter or digit, as in every element id: "[12]", "[ref=e3]"
}

func syntaxError(at int, what string) error {
	return fmt.Errorf("%w: %s at offset %d", ErrNotJSON, what, at)
}

// plain marks the bytes that may appear unescaped inside a JSON string and need no
// attention from the scanner.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\' && c != ']'
	}
	return t
}()

// skipPlain returns the offset of the first byte at or after i that is not plain.
// It tests eight bytes at a time, as request bodies are mostly long runs of text.
func skipPlain(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	// The loop reads the rest of b, resliced, so that the compiler proves
	// every load in bounds.
	for rest := b[i:]; len(rest) >= 8; rest, i = rest[8:], i+8 {
		x := binary.LittleEndian.Uint64(rest)
		// A backslash (0x5C) and a bracket (0x5D) differ in their lowest bit
		// only: with it cleared, one test finds both.
		q, bb := x^(ones*'"'), (x^(ones*'\\'))&^ones
		// Each term sets the high bit of a byte below 0x20, a quote, or a backslash or
		// bracket; the lowest bit set is exact, borrows only disturb higher bytes.
		if m := ((x-ones*0x20)&^x | (q-ones)&^q | (bb-ones)&^bb) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(b) && plain[b[i]] {
		i++
	}
	return i
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString validates the string literal whose opening quote is b[i] and returns it
// with the offset just past its closing quote.
func scanString(b []byte, i int) (literal, int, error) {
	lit := literal{start: i + 1}
	for i++; ; {
		i = skipPlain(b, i)
		if i >= len(b) {
			return lit, i, syntaxError(i, "unterminated string")
		}
		switch b[i] {
		case ']':
			if c := b[i-1]; isLetter(c) || isDigit(c) {
				lit.ids++
			}
			i++
		case '"':
			lit.end = i
			return lit, i + 1, nil
		case '\\':
			if i+1 >= len(b) {
				return lit, i, syntaxError(i, "unterminated escape")
			}
			switch b[i+1] {
			case '\\':
				if i+2 < len(b) && b[i+2] == 'n' {
					lit.nested++
				}
				i += 2
			case '"', '/', 'b', 'f', 'r', 't':
				i += 2
			case 'n':
				lit.newlines++
				i += 2
			case 'u':
				if i+6 > len(b) || hex4(b[i+2:i+6]) < 0 {
					return lit, i, syntaxError(i, `invalid \u escape`)
				}
				if hex4(b[i+2:i+6]) == '\n' {
					lit.newlines++
				}
				i += 6
			default:
				return lit, i, syntaxError(i, "invalid escape")
			}
		default:
			return lit, i, syntaxError(i, "control character in string")
		}
	}
}

// hex4 decodes four hex digits, or returns -1.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// skipValue validates the value starting at b[i] and returns the offset past it.
func skipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, syntaxError(i, "missing value")
	}
	switch c := b[i]; {
	case c == '"':
		_, j, err := scanString(b, i)
		return j, err
	case c == '{':
		return eachMember(b, i, depth, func(_ []byte, v int) (int, error) {
			return skipValue(b, v, depth+1)
		})
	case c == '[':
		return eachElement(b, i, depth, func(_, v int) (int, error) {
			return skipValue(b, v, depth+1)
		})
	case c == 't':
		return literalWord(b, i, "true")
	case c == 'f':
		return literalWord(b, i, "false")
	case c == 'n':
		return literalWord(b, i, "null")
	case c == '-' || '0' <= c && c <= '9':
		return scanNumber(b, i)
	default:
		return i, syntaxError(i, "unexpected character")
	}
}

func literalWord(b []byte, i int, word string) (int, error) {
	if !bytes.HasPrefix(b[i:], []byte(word)) {
		return i, syntaxError(i, "invalid literal")
	}
	return i + len(word), nil
}

// scanNumber follows the JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) (int, error) {
	start := i
	digits := func() bool {
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return i, syntaxError(start, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return i, syntaxError(start, "invalid number")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return i, syntaxError(start, "invalid number")
		}
	}
	return i, nil
}

// eachMember walks the object whose '{' is b[i]. For every member it calls member
// with the key and the offset of the value, which is inside b; member must
// consume the value and return the offset past it. A key with escapes is
// decoded first ("mod\u0065l" is "model"), as the upstream's JSON reader will.
func eachMember(b []byte, i, depth int, member func(key []byte, v int) (int, error)) (int, error) {
	if depth >= maxNesting {
		return i, syntaxError(i, "nesting too deep")
	}
	if i >= len(b) || b[i] != '{' {
		return i, syntaxError(i, "expected object")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, syntaxError(i, "expected member name")
		}
		key, j, err := scanString(b, i)
		if err != nil {
			return j, err
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return i, syntaxError(i, "expected ':'")
		}
		if i = skipSpace(b, i+1); i >= len(b) {
			return i, syntaxError(i, "missing value")
		}
		k := b[key.start:key.end]
		if bytes.IndexByte(k, '\\') >= 0 {
			k = []byte(unquote(k))
		}
		if i, err = member(k, i); err != nil {
			return i, err
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, syntaxError(i, "unterminated object")
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return i, syntaxError(i, "expected ',' or '}'")
		}
	}
}

// eachElement walks the array whose '[' is b[i], like eachMember.
func eachElement(b []byte, i, depth int, elem func(n, v int) (int, error)) (int, error) {
	if depth >= maxNesting {
		return i, syntaxError(i, "nesting too deep")
	}
	if i >= len(b) || b[i] != '[' {
		return i, syntaxError(i, "expected array")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for n := 0; ; n++ {
		if i >= len(b) {
			return i, syntaxError(i, "missing value")
		}
		var err error
		if i, err = elem(n, i); err != nil {
			return i, err
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, syntaxError(i, "unterminated array")
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return i + 1, nil
		default:
			return i, syntaxError(i, "expected ',' or ']'")
		}
	}
}

// stringOrSkip consumes the value at b[v]; when it is a string it is returned with ok.
func stringOrSkip(b []byte, v, depth int) (lit literal, next int, ok bool, err error) {
	if v < len(b) && b[v] == '"' {
		lit, next, err = scanString(b, v)
		return lit, next, err == nil, err
	}
	next, err = skipValue(b, v, depth)
	return lit, next, false, err
}

// word returns the content of the string literal lit of b as the upstream's
// JSON reader sees it: its bytes, decoded when it holds escapes, so that a
// role or a block type written "u\u0073er" is compared as "user".
func word(b []byte, lit literal) []byte {
	raw := b[lit.start:lit.end]
	if bytes.IndexByte(raw, '\\') >= 0 {
		return []byte(unquote(raw))
	}
	return raw
}

// unquote decodes a string literal's content without losing anything, so that
// the lines focusgate keeps can be encoded back to the bytes the client sent:
// invalid UTF-8 stays as the raw bytes it was, and an escaped surrogate that is
// not half of a pair (`\ud800`, as JavaScript and Python emit for a broken
// emoji) becomes the three bytes that UTF-8 would give the code point if it
// allowed one (ED A0 80: "WTF-8"), which are themselves invalid UTF-8, so that
// they cannot be mistaken for text. encoding/json would turn both into U+FFFD.
// The content must have been validated by scanString.
func unquote(raw []byte) string {
	var sb strings.Builder
	sb.Grow(len(raw))
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '\\')
		if i < 0 {
			i = len(raw)
		}
		writeUTF8(&sb, raw[:i])
		if raw = raw[i:]; len(raw) == 0 {
			break
		}
		switch c := raw[1]; c {
		case 'u':
			r := hex4(raw[2:6])
			raw = raw[6:]
			if utf16.IsSurrogate(r) {
				if len(raw) >= 6 && raw[0] == '\\' && raw[1] == 'u' {
					if pair := utf16.DecodeRune(r, hex4(raw[2:6])); pair != utf8.RuneError {
						sb.WriteRune(pair)
						raw = raw[6:]
						continue
					}
				}
				sb.WriteByte(0xe0 | byte(r>>12))
				sb.WriteByte(0x80 | byte(r>>6)&0x3f)
				sb.WriteByte(0x80 | byte(r)&0x3f)
				continue
			}
			sb.WriteRune(r)
			continue
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		default: // '"', '\\', '/'
			sb.WriteByte(c)
		}
		raw = raw[2:]
	}
	return sb.String()
}

// writeUTF8 copies unescaped string content, invalid UTF-8 included: a byte
// the client sent is a byte focusgate forwards, and replacing it would change
// lines that were not pruned.
func writeUTF8(sb *strings.Builder, p []byte) {
	sb.Write(p)
}

// rawSpans maps spans of the decoded text of raw to offsets in raw, in one pass.
// The spans must be sorted, and each must start at a line start and end at a line
// end of text. Every '\n' of the decoded text comes from exactly one "\n" or
// "\u000a" escape, so counting newlines maps line boundaries without decoding
// anything again.
func rawSpans(raw []byte, text string, spans []span) []span {
	out := make([]span, len(spans))
	// wants[2k] newline escapes precede span k; it ends at escape wants[2k+1], if any.
	wants := make([]int, 0, 2*len(spans))
	newlines, at := 0, 0
	for k, s := range spans {
		newlines += strings.Count(text[at:s.start], "\n")
		wants = append(wants, newlines)
		newlines += strings.Count(text[s.start:s.end], "\n")
		wants = append(wants, newlines+1)
		at = s.end
		out[k] = span{0, len(raw)}
	}
	w, seen := 0, 0
	if len(wants) > 0 && wants[0] == 0 {
		w = 1
	}
	for i := 0; w < len(wants); {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 {
			break
		}
		i += j
		width, newline := 2, raw[i+1] == 'n'
		if raw[i+1] == 'u' {
			width, newline = 6, hex4(raw[i+2:i+6]) == '\n'
		}
		if newline {
			seen++
			for ; w < len(wants) && wants[w] == seen; w++ {
				if w%2 == 0 {
					out[w/2].start = i + width
				} else {
					out[w/2].end = i
				}
			}
		}
		i += width
	}
	return out
}
