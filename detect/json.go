package detect

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
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
	ids        int // ']' right after a letter or digit, as in every element id: "[12]", "[ref=e3]"; only stringContent counts them
}

func syntaxError(at int, what string) error {
	return fmt.Errorf("%w: %s at offset %d", ErrNotJSON, what, at)
}

// skipPlain returns the offset of the first byte at or after i that a JSON
// string may not hold as it is (a control byte), or that ends it or starts
// an escape (a quote, a backslash), or len(b), reading a word at a time.
func skipPlain(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		if m := stops(binary.LittleEndian.Uint64(b[i:i+8])) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(b) && b[i] >= 0x20 && b[i] != '"' && b[i] != '\\' {
		i++
	}
	return i
}

const ones, highs = 0x0101010101010101, 0x8080808080808080

// stops sets the high bit of each lane of x that is below 0x20, a quote or a
// backslash; the lowest bit set is exact, borrows only disturb higher bytes.
func stops(x uint64) uint64 {
	q, bs := x^(ones*'"'), x^(ones*'\\')
	return (x-ones*0x20)&^x | (q-ones)&^q | (bs-ones)&^bs
}

// firstControl returns the offset of the first byte of s below 0x20, or -1.
//
// A lane v of x is below 0x20 when neither (v|0x80)-0x20 nor v has its high
// bit set; the subtraction never borrows from the next lane, so the 64 bytes
// of eight words are checked at once, at about a third of skipPlain's cost a
// byte. The masks are read from variables so that the compiler keeps them
// in registers instead of loading each again at every use.
func firstControl(s []byte) int {
	h, c := highMask, controlLimit
	n := len(s)
	for len(s) >= 64 {
		w := plain(s[:8], h, c) & plain(s[8:16], h, c) & plain(s[16:24], h, c) & plain(s[24:32], h, c) &
			plain(s[32:40], h, c) & plain(s[40:48], h, c) & plain(s[48:56], h, c) & plain(s[56:64], h, c)
		if w&h != h {
			break
		}
		s = s[64:]
	}
	for k, v := range s {
		if v < 0x20 {
			return n - len(s) + k
		}
	}
	return -1
}

var highMask, controlLimit uint64 = highs, ones * 0x20

// plain has the high bit of each lane of the word w set unless that byte is
// below 0x20.
func plain(w []byte, h, c uint64) uint64 {
	x := binary.LittleEndian.Uint64(w)
	return (x | h) - c | x
}

// enoughIDs says whether raw, a string's content, holds at least n element
// ids: a bracket that starts with a letter or digit, ends with one and holds
// a digit, as "[12]", "[a212]", "[0-12]" and "[ref=e3]" do, and markdown's
// "[x]" boxes and "[#1234]" links do not. It is asked only of the few strings
// with lines enough for a tree, so the scan of every string leaves brackets
// alone.
func enoughIDs(raw []byte, n int) bool {
	for i := 1; n > 0 && i < len(raw); i++ {
		j := bytes.IndexByte(raw[i:], ']')
		if j < 0 {
			return false
		}
		if i += j; isID(raw, i) {
			n--
		}
	}
	return n <= 0
}

// maxIDLen bounds what isID reads back from a ']' for its '['.
const maxIDLen = 24

// isID says whether the ']' at raw[end] closes an element id. It reads back
// to the '[' and gives up at a blank or an escape, which no id holds, so
// that a markdown link's text is left after a word. A \u escape is read
// over: a writer such as Gson writes the '=' of "[ref=e3]" as "\u003d".
func isID(raw []byte, end int) bool {
	if end == 0 || !isLetter(raw[end-1]) && !isDigit(raw[end-1]) {
		return false
	}
	digit := false
	for k := end - 1; k >= 0 && end-k <= maxIDLen+6; k-- {
		switch c := raw[k]; {
		case c == '[':
			return digit && k+1 < end && (isLetter(raw[k+1]) || isDigit(raw[k+1]))
		case isDigit(c):
			digit = true
		case c == '\\' && k+1 < end && raw[k+1] == 'u':
		case c == ' ' || c == '\\' || c == ']':
			return false
		}
	}
	return false
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
//
// Keys and short values end within their first word, which is read as
// skipPlain reads it. A longer run is searched for its next backslash and
// quote with the vector instructions of bytes.IndexByte, the quote once per
// string rather than once per escape, so that the scan stays linear however
// many escapes the string holds; the control bytes a string may not hold are
// looked for once, over its whole content, when its end is known.
func scanString(b []byte, i int) (literal, int, error) {
	lit := literal{start: i + 1}
	q := -1 // the first quote at or after i, once searched for
	for i++; ; {
		var m uint64
		if i+8 <= len(b) {
			m = stops(binary.LittleEndian.Uint64(b[i:i+8])) & highs
		}
		switch {
		case i+8 > len(b):
			i = skipPlain(b, i)
		case m != 0:
			i += bits.TrailingZeros64(m) / 8
		default:
			if q < i {
				if q = bytes.IndexByte(b[i:], '"'); q < 0 {
					q = len(b)
				} else {
					q += i
				}
			}
			if k := bytes.IndexByte(b[i:q], '\\'); k >= 0 {
				i += k
			} else {
				i = q
			}
		}
		if i >= len(b) {
			if err := searchedControl(b, lit.start, i, q); err != nil {
				return lit, i, err
			}
			return lit, i, syntaxError(i, "unterminated string")
		}
		switch b[i] {
		case '"':
			if err := searchedControl(b, lit.start, i, q); err != nil {
				return lit, i, err
			}
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

// searchedControl reports a control byte in b[start:end], the content of a
// string that scanString searched with its quote at q; a string it never
// searched (q < 0) had every byte checked a word at a time.
func searchedControl(b []byte, start, end, q int) error {
	if q < 0 {
		return nil
	}
	if k := firstControl(b[start:end]); k >= 0 {
		return syntaxError(start+k, "control character in string")
	}
	return nil
}

// hex4 decodes four hex digits, or returns -1.
func hex4[T string | []byte](h T) rune {
	var r rune
	for i := range 4 {
		c := h[i]
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
			k = []byte(unquote(asString(k)))
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
		return []byte(unquote(asString(raw)))
	}
	return raw
}

// asString is b as a string, without a copy, for reading a body that is not
// modified while it is read; nothing that outlives the reading keeps it.
func asString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// unquote decodes a string literal's content without losing anything, so that
// the lines focusgate keeps can be encoded back to the bytes the client sent:
// invalid UTF-8 stays as the raw bytes it was, and an escaped surrogate that is
// not half of a pair (`\ud800`, as JavaScript and Python emit for a broken
// emoji) becomes the three bytes that UTF-8 would give the code point if it
// allowed one (ED A0 80: "WTF-8"), which are themselves invalid UTF-8, so that
// they cannot be mistaken for text. encoding/json would turn both into U+FFFD.
// appendEscaped is its inverse, and escapeWidth measures each escape as it
// decodes it. The content must have been validated by scanString (or cut by
// stringContent before an escape it would cut in two).
func unquote(raw string) string {
	var sb strings.Builder
	sb.Grow(len(raw))
	unquoteTo(&sb, raw)
	return sb.String()
}

// unquoteTo writes what unquote makes of raw to sb.
func unquoteTo(sb *strings.Builder, raw string) {
	for len(raw) > 0 {
		i := strings.IndexByte(raw, '\\')
		if i < 0 {
			i = len(raw)
		}
		// A byte the client sent is a byte focusgate forwards, invalid
		// UTF-8 included: replacing it would change lines not pruned.
		sb.WriteString(raw[:i])
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
}

// escapeWidth returns the length of the escape that starts esc (at a
// backslash) and the length of what unquote makes of it.
func escapeWidth(esc string) (size, width int) {
	switch {
	case len(esc) < 2:
		return len(esc), 0
	case esc[1] != 'u':
		return 2, 1
	case len(esc) < 6:
		return len(esc), 0
	}
	r := hex4(esc[2:6])
	if !utf16.IsSurrogate(r) {
		return 6, utf8.RuneLen(r)
	}
	if len(esc) >= 12 && esc[6] == '\\' && esc[7] == 'u' && utf16.DecodeRune(r, hex4(esc[8:12])) != utf8.RuneError {
		return 12, 4
	}
	return 6, 3
}

// cursor maps offsets of the text a string literal's content decodes to
// onto offsets in the content, walking both forward in step. The offsets it
// is asked for must not decrease, so that placing every line of every tree
// of a string costs one pass over the string, however many trees it holds
// (a saved result can hold a page a thousand times on one line). An offset
// inside an escape maps to the escape's start; one past the text to the end
// of the content.
type cursor struct {
	raw  string
	i, d int // the offsets reached, in raw and in the decoded text
	next int // the first backslash at or after i, or len(raw)
}

func newCursor(raw string) cursor {
	c := cursor{raw: raw}
	c.next = c.backslash(0)
	return c
}

// backslash returns the first backslash of raw at or after i, or len(raw).
func (c *cursor) backslash(i int) int {
	if j := strings.IndexByte(c.raw[i:], '\\'); j >= 0 {
		return i + j
	}
	return len(c.raw)
}

// at returns the offset in raw of the decoded offset d.
func (c *cursor) at(d int) int {
	for c.d < d {
		if plain := c.next - c.i; c.d+plain >= d {
			c.i += d - c.d
			c.d = d
			break
		}
		c.d += c.next - c.i
		c.i = c.next
		if c.i >= len(c.raw) {
			break
		}
		size, width := escapeWidth(c.raw[c.i:])
		if c.d+width > d {
			break
		}
		c.i += size
		c.d += width
		c.next = c.backslash(c.i)
	}
	return c.i
}

// appendEscaped appends s escaped as the content of a JSON string, times
// times over: once for a text in the body's own string, once more for each
// JSON text between (a tool result passed through JSON.stringify). It is
// unquote's inverse, so that kept text leaves as it came: invalid UTF-8 is
// written back as the raw bytes it was, and the three bytes unquote makes of
// a lone escaped surrogate (ED A0..BF 80..BF) become that escape again, in
// lower-case hex as JavaScript and Python write it. Unlike encoding/json it
// leaves <, > and & alone, as JSON.stringify does: the text goes to a model,
// not into HTML, and escaping them would only cost tokens.
func appendEscaped(dst []byte, s string, times int) []byte {
	if times <= 0 {
		return append(dst, s...)
	}
	start := 0
	for i := 0; i < len(s); {
		if len(s)-i >= 32 {
			i = skipUnescaped(s, i)
		}
		for i < len(s) && unescaped[s[i]] {
			i++
		}
		if i >= len(s) {
			break
		}
		if e := shortEscape[s[i]]; e != 0 && times == 1 {
			// A tab, a line break, a quote: what most markers and stubs
			// hold, written without more ado. A marker is indented as the
			// line it stands for, often by ten tabs and more.
			dst = append(dst, s[start:i]...)
			if e == 't' {
				j := tabsEnd(s, i)
				dst = appendTabs(dst, j-i)
				i = j
			} else {
				dst = append(dst, '\\', e)
				i++
			}
			start = i
			continue
		}
		esc, n, size := escapeOf(s, i)
		if n > 0 {
			dst = append(dst, s[start:i]...)
			dst = appendAgain(dst, esc[:n], times)
			start = i + size
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// tabsEnd is the end of the run of tabs at s[i].
func tabsEnd(s string, i int) int {
	for i < len(s) && s[i] == '\t' {
		i++
	}
	return i
}

// escapedTabs is what a run of tabs is written as, a chunk at a time.
const escapedTabs = `\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t`

// appendTabs appends n tabs, escaped once.
func appendTabs(dst []byte, n int) []byte {
	for ; n > len(escapedTabs)/2; n -= len(escapedTabs) / 2 {
		dst = append(dst, escapedTabs...)
	}
	return append(dst, escapedTabs[:2*n]...)
}

// shortEscape is the letter of the two-byte escape of the bytes that have
// one, as one encoding writes them; 0 for the others.
var shortEscape = [256]byte{'"': '"', '\\': '\\', '\n': 'n', '\r': 'r', '\t': 't'}

// escapedSize is about the length appendEscaped appends, never more: exact
// for a run of tabs followed by printable ASCII that is neither a quote nor
// a backslash, as markers and most stubs are, and short by what any other
// byte's escape adds (a caller sizing a buffer with it then grows it once).
// Measuring every byte as appendEscaped writes it doubled the cost of
// writing a pruned page back.
func escapedSize(s string, times int) int {
	if times <= 0 {
		return len(s)
	}
	// A tab is written with 2^(times-1) backslashes and a t.
	tabs := tabsEnd(s, 0)
	return len(s) + tabs<<(times-1)
}

// unescaped marks the bytes that no encoding escapes: printable ASCII but
// the quote and the backslash.
var unescaped = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// escapeOf reads the character at s[i], a byte unescaped does not mark: its
// escape as one encoding writes it (n bytes of esc, 0 when it needs none:
// valid UTF-8, or an invalid byte, which goes out raw as it came in) and the
// bytes it stands for.
func escapeOf(s string, i int) (esc [6]byte, n, size int) {
	c := s[i]
	if c < utf8.RuneSelf {
		switch c {
		case '"', '\\':
			esc[0], esc[1] = '\\', c
			return esc, 2, 1
		case '\n':
			esc[0], esc[1] = '\\', 'n'
			return esc, 2, 1
		case '\r':
			esc[0], esc[1] = '\\', 'r'
			return esc, 2, 1
		case '\t':
			esc[0], esc[1] = '\\', 't'
			return esc, 2, 1
		}
		return uEscape(rune(c)), 6, 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == utf8.RuneError && size == 1:
		if c == 0xed && i+2 < len(s) && s[i+1]&0xe0 == 0xa0 && s[i+2]&0xc0 == 0x80 {
			return uEscape(0xd000 | rune(s[i+1]&0x3f)<<6 | rune(s[i+2]&0x3f)), 6, 3
		}
		return esc, 0, 1
	case r == '\u2028' || r == '\u2029':
		// Valid JSON, but they end lines in JavaScript; encoding/json
		// escapes them, and so do we.
		return uEscape(r), 6, size
	}
	return esc, 0, size
}

const hexDigits = "0123456789abcdef"

// uEscape is the \u escape of r, which is below 0x10000.
func uEscape(r rune) [6]byte {
	return [6]byte{'\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf]}
}

// appendAgain appends esc, an escape as one encoding writes it, as times
// encodings write it: each encoding after the first doubles every backslash
// and puts one more before a quote.
func appendAgain(dst []byte, esc []byte, times int) []byte {
	k := 1 << (times - 1) // the backslashes a backslash becomes
	for _, b := range esc {
		switch b {
		case '\\':
			for range k {
				dst = append(dst, '\\')
			}
		case '"':
			for range k - 1 {
				dst = append(dst, '\\')
			}
			dst = append(dst, '"')
		default:
			dst = append(dst, b)
		}
	}
	return dst
}

// skipUnescaped returns the offset of the first byte at or after i, among
// whole words of eight, that may need escaping: a control byte, a quote, a
// backslash or a byte of a multi-byte character. A page's lines are long
// runs of bytes that need none.
func skipUnescaped(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// A byte of a multi-byte character has its own high bit set.
		if m := (stops(x) | x) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	return i
}
