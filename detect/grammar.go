package detect

import (
	"strings"

	"github.com/focusgate/focusgate"
)

// This file holds one parser per tree grammar. Each parses the element that starts
// at the line beginning at s[p] and reports it in offsets of s. Parsers never look
// behind p and look ahead only to follow a name that runs over several lines, so a
// line parses the same whatever precedes it.

const (
	// maxContinuation bounds how many further lines an element may take when its
	// name holds unescaped newlines.
	maxContinuation = 8
	// maxBIDLen bounds element ids; BrowserGym's are a frame prefix and a counter.
	maxBIDLen = 16
	// maxTextRun bounds the page text browser-use may print between two elements
	// before the list is taken to have ended.
	maxTextRun = 32
	// maxClosingQuotes bounds how many quotes of a line are tried as the end of a
	// name, so that a long line full of quotes costs linear time.
	maxClosingQuotes = 32
)

// element is one parsed tree line. Start and End are offsets in the scanned string and
// Depth is the absolute indentation; a block makes them relative.
type element struct {
	focusgate.Line
	next    int  // start of the line after the element; past len(s) at the end
	id      bool // carries an element id and counts towards MinIDLines
	counted bool // counts towards MinLines
	focused bool // the tree marks this element as focused
	vote    int8 // > 0: evidence of WebArena's grammar, < 0: of BrowserGym's
}

type parseFunc func(s string, p int) (element, bool)

// lineEnd returns the offset of the '\n' ending the line that starts at p, or len(s).
func lineEnd(s string, p int) int {
	if i := strings.IndexByte(s[p:], '\n'); i >= 0 {
		return p + i
	}
	return len(s)
}

// content returns the end of a line's content: e without a trailing '\r'.
func content(s string, p, e int) int {
	if e > p && s[e-1] == '\r' {
		return e - 1
	}
	return e
}

func isBlank(s string) bool {
	return strings.TrimLeft(s, " \t\r") == ""
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isQuote(c byte) bool  { return c == '\'' || c == '"' }

// isNameChar accepts the characters of roles, tags and property names.
func isNameChar(c byte) bool { return isLetter(c) || isDigit(c) || c == '-' || c == '_' }

// name returns the length of the role-like name at the start of s: a letter, then
// letters, digits, '-' or '_'.
func name(s string) int {
	if s == "" || !isLetter(s[0]) {
		return 0
	}
	i := 1
	for i < len(s) && isNameChar(s[i]) {
		i++
	}
	return i
}

func digits(s string) int {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

func tabs(s string, p, e int) int {
	i := p
	for i < e && s[i] == '\t' {
		i++
	}
	return i - p
}

// tail is what a grammar finds after an element's name.
type tail struct {
	ok, focused bool
	vote        int8
}

type tailFunc func(string) tail

// quoted parses a Python-style quoted name whose opening quote is s[q], on the line
// whose content ends at ce. The name ends at the first closing quote followed by a
// tail the grammar accepts, which also handles names printed without escaping their
// inner quotes. A name with no closing quote on its line continues over the next
// lines; one cut off by a blank line or the end of the text (a truncated tree) ends
// with its line. It returns the end of the element's last line.
func quoted(s string, q, ce int, accept tailFunc) (end int, t tail, ok bool) {
	quote := s[q]
	t, closed, sawQuote := closeName(s, q+1, ce, quote, accept)
	e := lineEnd(s, ce)
	if closed {
		return e, t, true
	}
	if sawQuote {
		return 0, tail{}, false
	}
	first := e
	for n := 0; n < maxContinuation && e < len(s); n++ {
		p := e + 1
		e = lineEnd(s, p)
		c := content(s, p, e)
		if isBlank(s[p:c]) {
			break
		}
		if s[p] == '\t' {
			// An indented line is the next element, not the rest of a name.
			return 0, tail{}, false
		}
		if t, closed, _ := closeName(s, p, c, quote, accept); closed {
			return e, t, true
		}
	}
	if first == len(s) || isBlank(s[first+1:content(s, first+1, lineEnd(s, first+1))]) {
		return first, tail{ok: true}, true
	}
	return 0, tail{}, false
}

func closeName(s string, i, ce int, quote byte, accept tailFunc) (t tail, closed, sawQuote bool) {
	for tries := 0; i < ce && tries < maxClosingQuotes; i++ {
		switch s[i] {
		case '\\':
			i++
		case quote:
			sawQuote = true
			if t = accept(s[i+1 : ce]); t.ok {
				return t, true, true
			}
			tries++
		}
	}
	return tail{}, false, sawQuote
}
