package prune

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Errors ParseAnswer returns; Pruner reports them as "empty-answer" and
// "bad-answer". Either way the observation goes out unpruned.
var (
	ErrEmptyAnswer = errors.New("prune: retriever chose no lines")
	ErrBadAnswer   = errors.New("prune: retriever answer has no usable line ranges")
)

// ParseAnswer reads the line ranges out of a retriever answer for a tree of
// n lines. Models do not follow formats to the letter, so it is tolerant:
// the ranges may sit in an <answer> tag, a ``` fence or a bare list; a
// range may be written (a,b), [a,b], "a-b", a-b, "a to b", or as one line
// number. Reversed ranges are turned round, ranges are clipped to [1,n] and
// dropped when wholly outside, and overlapping or adjacent ranges are
// merged, so the result is sorted and disjoint.
//
// Prose without a list outside any tag is ErrBadAnswer rather than a source of
// numbers: "error 42" must not become "keep line 42". A blank answer or an
// empty list is ErrEmptyAnswer. Lines in an <injection> section (the
// defender prompt's report of attack lines) go to Flagged; an answer that
// flags lines but keeps none keeps every other line.
func ParseAnswer(answer string, n int) (Selection, error) {
	if strings.TrimSpace(answer) == "" {
		return Selection{}, ErrEmptyAnswer
	}
	text, injection, _ := cutSection(stripThink(answer), "injection")
	keep, ok := answerSection(text)
	if !ok {
		return Selection{}, fmt.Errorf("%w: no <answer> tag, code fence or list", ErrBadAnswer)
	}
	var sel Selection
	for _, r := range normalize(parseRanges(injection), n) {
		for i := r.From; i <= r.To; i++ {
			sel.Flagged = append(sel.Flagged, i)
		}
	}
	sel.Ranges = normalize(parseRanges(keep), n)
	switch {
	case len(sel.Ranges) > 0:
		return sel, nil
	case len(sel.Flagged) > 0 && !strings.ContainsAny(keep, "0123456789"):
		sel.Ranges = []Range{{1, n}}
		return sel, nil
	case !strings.ContainsAny(keep, "0123456789"):
		return Selection{}, ErrEmptyAnswer
	}
	return Selection{}, fmt.Errorf("%w: no range inside lines 1-%d", ErrBadAnswer, n)
}

// cutSection removes every <tag>...</tag> block from s and returns the rest
// and the content of the last block. An unclosed tag runs to the end.
func cutSection(s, tag string) (rest, content string, found bool) {
	open, closing := "<"+tag+">", "</"+tag+">"
	var b strings.Builder
	for {
		i := indexFold(s, open)
		if i < 0 {
			b.WriteString(s)
			return b.String(), content, found
		}
		b.WriteString(s[:i])
		s = s[i+len(open):]
		found = true
		if j := indexFold(s, closing); j >= 0 {
			content, s = s[:j], s[j+len(closing):]
		} else {
			content, s = s, ""
		}
	}
}

// stripThink drops closed <think> blocks, whose reasoning is full of line
// numbers that are not the answer.
func stripThink(s string) string {
	for {
		i := indexFold(s, "<think>")
		if i < 0 {
			return s
		}
		j := indexFold(s[i:], "</think>")
		if j < 0 {
			return s
		}
		s = s[:i] + s[i+j+len("</think>"):]
	}
}

// answerSection finds the text that holds the ranges: the last <answer> tag,
// else the last fenced block, else a bare answer that is a list.
func answerSection(s string) (string, bool) {
	if _, content, ok := cutSection(s, "answer"); ok {
		return content, true
	}
	if parts := strings.Split(s, "```"); len(parts) >= 2 {
		last := len(parts) - 1 // odd indexes are inside fences; take the last, closed or not
		if last%2 == 0 {
			last--
		}
		block := parts[last]
		if nl := strings.IndexByte(block, '\n'); nl >= 0 && !strings.ContainsAny(block[:nl], "0123456789") {
			block = block[nl+1:] // a language tag such as ```json
		}
		return block, true
	}
	s = strings.TrimSpace(s)
	if isBareList(s) {
		return s, true
	}
	if j := strings.LastIndexByte(s, ']'); j >= 0 {
		// Take the whole list that ends there, so that "keep [(1,3), (5,9)]"
		// yields both tuples, not only the last.
		depth := 0
		for k := j; k >= 0; k-- {
			switch s[k] {
			case ']':
				depth++
			case '[':
				depth--
			}
			if depth == 0 {
				return s[k : j+1], true
			}
		}
	}
	return "", false
}

// isBareList reports whether s holds nothing but a list: digits, brackets,
// quotes, separators and range dashes.
func isBareList(s string) bool {
	return s != "" && strings.Trim(s, "0123456789()[]{},;:-–. \t\r\n\"'") == ""
}

// indexFold is strings.Index ignoring ASCII case, for tags like <Answer>.
func indexFold(s, substr string) int {
	for i := 0; i+len(substr) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(substr)], substr) {
			return i
		}
	}
	return -1
}

// item is one token of a range list: a number, a range operator, or a
// bracketed group.
type item struct {
	num   int
	op    bool
	group *group
}

type group struct {
	paren bool
	items []item
}

// maxNesting bounds bracket depth, so that a hostile answer cannot make
// walk recurse without limit; deeper brackets are read as separators.
const maxNesting = 16

// parseRanges reads ranges from a list written in any of the forms
// ParseAnswer accepts. A group of exactly two numbers is a range when it is
// a tuple "(a,b)" or sits inside another list "[[a,b]]"; a top-level list
// "[a, b, c]" is a list of single lines. Between these, a-b is a range and a
// lone number a one-line range. Anything else is a separator.
func parseRanges(s string) []Range {
	root := &group{}
	stack := []*group{root}
	top := func() *group { return stack[len(stack)-1] }
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			v := 0
			for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
				if v < 1<<40 { // far beyond any line count, and far from overflow
					v = v*10 + int(s[i]-'0')
				}
			}
			top().items = append(top().items, item{num: v})
			continue
		case c == '-':
			top().items = append(top().items, item{op: true})
		case strings.HasPrefix(s[i:], "–"):
			top().items = append(top().items, item{op: true})
			i += len("–")
			continue
		case strings.HasPrefix(s[i:], ".."):
			top().items = append(top().items, item{op: true})
			i += len("..")
			continue
		case c|0x20 == 't' && i+1 < len(s) && s[i+1]|0x20 == 'o' && !isLetter(s, i-1) && !isLetter(s, i+2):
			top().items = append(top().items, item{op: true})
			i += 2
			continue
		case (c == '(' || c == '[' || c == '{') && len(stack) < maxNesting:
			g := &group{paren: c == '('}
			top().items = append(top().items, item{group: g})
			stack = append(stack, g)
		case c == ')' || c == ']' || c == '}':
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
		}
		i++
	}
	var out []Range
	root.walk(0, &out)
	return out
}

// isLetter reports whether s[i] is an ASCII letter, so that "to" counts as
// a range operator only as a word of its own.
func isLetter(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return false
	}
	c := s[i] | 0x20
	return c >= 'a' && c <= 'z'
}

func (g *group) walk(depth int, out *[]Range) {
	if (g.paren || depth >= 2) && len(g.items) == 2 && g.items[0].isNum() && g.items[1].isNum() {
		*out = append(*out, Range{g.items[0].num, g.items[1].num})
		return
	}
	for i := 0; i < len(g.items); i++ {
		it := g.items[i]
		switch {
		case it.group != nil:
			it.group.walk(depth+1, out)
		case it.op: // a dash with no number before it
		case i+2 < len(g.items) && g.items[i+1].op && g.items[i+2].isNum():
			*out = append(*out, Range{it.num, g.items[i+2].num})
			i += 2
		default:
			*out = append(*out, Range{it.num, it.num})
		}
	}
}

func (it item) isNum() bool { return it.group == nil && !it.op }

// normalize turns reversed ranges round, clips them to [1,n], drops those
// wholly outside, and merges overlapping or adjacent ones. It returns a new
// slice, sorted and disjoint.
func normalize(rs []Range, n int) []Range {
	out := make([]Range, 0, len(rs))
	for _, r := range rs {
		if r.From > r.To {
			r.From, r.To = r.To, r.From
		}
		r.From, r.To = max(r.From, 1), min(r.To, n)
		if r.From > r.To {
			continue // wholly outside [1,n]
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Range) int { return a.From - b.From })
	merged := out[:0]
	for _, r := range out {
		if k := len(merged) - 1; k >= 0 && r.From <= merged[k].To+1 {
			merged[k].To = max(merged[k].To, r.To)
			continue
		}
		merged = append(merged, r)
	}
	if len(merged) == 0 {
		return nil
	}
	return merged
}
