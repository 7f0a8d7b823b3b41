package prune

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/focusgate/focusgate"
)

// ErrBadAnswer is the error ParseAnswer returns for an answer that names no
// usable lines: no list where one belongs, an empty list, only element ids,
// only negative or out-of-range numbers, or nothing at all. Pruner reports it
// as "bad-answer" and the observation goes out unpruned.
var ErrBadAnswer = errors.New("prune: retriever answer has no usable line ranges")

// ParseAnswer reads the line ranges out of a retriever answer for a tree of n
// lines. A wrong reading is worse than none (a page cut to the one line an
// element id happened to name is worse than a page left whole), so where the
// numbers may come from is strict, and how they are written is tolerant.
//
// Where: line numbers come only from the <answer> tags (several tags: their
// union); when there is no tag, from the fenced blocks or the bare answer
// that hold nothing but a list (numbers, ranges, brackets, quotes and
// separators). Prose around a list without a tag is not an answer. Text
// inside <think> (or <thinking>) is never the answer, nor is the rest of an
// answer cut off inside an unclosed <think>, nor anything before a
// </think> without its opening tag (models whose chat template opens the
// reasoning for them).
//
// How: a range may be written (a,b), [a,b] inside a list, "a-b", a–b, a..b,
// "a to b", or as one line number. A token with letters (a405, 'a252', ea12,
// 2nd) is never a line number. A range with a negative number is invalid
// and dropped. Reversed ranges are turned round, ranges are clipped to [1,n]
// and dropped when wholly outside, and overlapping or adjacent ranges are
// merged, so the result is sorted and disjoint.
//
// Cut-off lists: only complete ranges count. A tuple or pair whose closing
// bracket never came is dropped, and in a section that may have been cut off
// (an unclosed <answer> tag or fence) so is a number or range the text ends
// in, since "(20,25" may have been going to be "(20,250)".
//
// Lines in <injection> tags (the defender prompt's report of attack lines)
// go to Flagged; an answer that flags lines and keeps an empty list keeps
// every other line. Any other answer without a usable range is ErrBadAnswer.
//
// Parsing takes time linear in the length of the answer.
func ParseAnswer(answer string, n int) (Selection, error) {
	return parseAnswer(answer, n, false)
}

// parseAnswer is ParseAnswer for an answer that may have been cut off by the
// output-token cap (cut): then even the bare answer it ends in is read as
// incomplete.
func parseAnswer(answer string, n int, cut bool) (Selection, error) {
	p := splitAnswer(answer)
	keep, where := p.answers, "<answer> tag"
	if len(keep) == 0 {
		keep, where = p.untagged(cut), "list"
		if len(keep) == 0 {
			return Selection{}, fmt.Errorf("%w: no <answer> tag, and no fenced block or bare answer holding only a list", ErrBadAnswer)
		}
	}

	var sel Selection
	var flagged list
	for _, s := range p.injections {
		flagged.add(s)
	}
	for _, r := range normalize(flagged.ranges, n) {
		for i := r.From; i <= r.To; i++ {
			sel.Flagged = append(sel.Flagged, i)
		}
	}
	var kept list
	for _, s := range keep {
		kept.add(s)
	}
	sel.Ranges = normalize(kept.ranges, n)
	switch {
	case len(sel.Ranges) > 0:
		return sel, nil
	case len(sel.Flagged) > 0 && kept.numbers == 0:
		sel.Ranges = []focusgate.Range{{From: 1, To: n}}
		return sel, nil
	case kept.numbers == 0:
		return Selection{}, fmt.Errorf("%w: no line number in the %s", ErrBadAnswer, where)
	}
	return Selection{}, fmt.Errorf("%w: no complete, non-negative range inside lines 1-%d in the %s", ErrBadAnswer, n, where)
}

// section is a piece of an answer that may hold a list. complete is false
// when the piece may have been cut off: an unclosed tag or fence.
type section struct {
	text     string
	complete bool
}

// parts is an answer split by its tags.
type parts struct {
	answers    []section
	injections []section
	outside    string // the text in no tag, reasoning removed
}

// tagKind names the tags splitAnswer acts on.
type tagKind int

const (
	openThink tagKind = iota + 1
	closeThink
	openAnswer
	closeAnswer
	openInjection
	closeInjection
)

var tags = []struct {
	name string
	kind tagKind
}{
	{"<think>", openThink},
	{"<thinking>", openThink},
	{"</think>", closeThink},
	{"</thinking>", closeThink},
	{"<answer>", openAnswer},
	{"</answer>", closeAnswer},
	{"<injection>", openInjection},
	{"</injection>", closeInjection},
}

// tagAt returns the tag s starts with, ignoring ASCII case, and its length.
func tagAt(s string) (tagKind, int) {
	for _, t := range tags {
		if len(s) >= len(t.name) && strings.EqualFold(s[:len(t.name)], t.name) {
			return t.kind, len(t.name)
		}
	}
	return 0, 0
}

// splitAnswer splits an answer into its <answer> and <injection> sections and
// the text outside any tag, dropping reasoning, in one pass over the text.
// Inside a tag, other tags are text (a reasoning that mentions "<answer>"
// does not open one); a tag left open runs to the end of the answer.
func splitAnswer(s string) parts {
	var p parts
	var outside strings.Builder
	state, start := tagKind(0), 0 // the open tag, and where its content or the outside text began
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			break
		}
		i += j
		kind, size := tagAt(s[i:])
		if kind == 0 {
			i++
			continue
		}
		end := i + size
		switch {
		case state == 0 && (kind == openThink || kind == openAnswer || kind == openInjection):
			outside.WriteString(s[start:i])
			state, start = kind, end
		case state == 0 && kind == closeThink:
			// Everything so far was reasoning whose opening tag the
			// model's template wrote for it.
			outside.Reset()
			p.answers, p.injections = nil, nil
			start = end
		case state == 0 && (kind == closeAnswer || kind == closeInjection):
			// A stray closing tag is no part of a list.
			outside.WriteString(s[start:i])
			start = end
		case state == openThink && kind == closeThink:
			state, start = 0, end
		case state == openAnswer && kind == closeAnswer:
			p.answers = append(p.answers, section{s[start:i], true})
			state, start = 0, end
		case state == openInjection && kind == closeInjection:
			p.injections = append(p.injections, section{s[start:i], true})
			state, start = 0, end
		}
		i = end
	}
	switch state {
	case 0:
		outside.WriteString(s[start:])
	case openAnswer:
		p.answers = append(p.answers, section{s[start:], false})
	case openInjection:
		p.injections = append(p.injections, section{s[start:], false})
	}
	p.outside = outside.String()
	return p
}

// untagged returns where an answer without an <answer> tag holds its list:
// the fenced blocks that hold only a list, else the whole text outside tags
// if that is a list. cut says the text may have been cut off at its end.
func (p parts) untagged(cut bool) []section {
	if strings.Contains(p.outside, "```") {
		var out []section
		blocks := strings.Split(p.outside, "```")
		for i := 1; i < len(blocks); i += 2 { // odd indexes are inside fences
			block := blocks[i]
			if nl := strings.IndexByte(block, '\n'); nl >= 0 && !strings.ContainsAny(block[:nl], "0123456789") {
				block = block[nl+1:] // a language tag such as ```json
			}
			if isBareList(block) {
				out = append(out, section{block, i+1 < len(blocks)}) // unclosed: cut off
			}
		}
		return out
	}
	if isBareList(p.outside) {
		return []section{{p.outside, !cut}}
	}
	return nil
}

// isBareList reports whether s holds a list and nothing else: digits,
// brackets, quotes, separators and range dashes, no letters.
func isBareList(s string) bool {
	digits := false
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits = true
		case strings.ContainsRune("()[]{},;:-–—−. \t\r\n\"'", r):
		default:
			return false
		}
	}
	return digits
}

// maxNesting bounds bracket depth, so that a hostile answer cannot make
// walk recurse without limit; deeper brackets are read as separators.
const maxNesting = 16

// itemKind is what one token of a list is.
type itemKind uint8

const (
	number itemKind = iota
	rangeOp
	subgroup
)

// item is one token of a list: a number, a range operator ("-", "to", ...)
// or a bracketed group.
type item struct {
	group *group
	num   int32
	kind  itemKind
	neg   bool // the number had a minus sign or a fraction: no line, and no range with it
}

type group struct {
	paren  bool // (...) rather than [...] or {...}
	closed bool // its closing bracket came
	items  []item
}

// list accumulates the ranges of the sections of one kind.
type list struct {
	ranges  []focusgate.Range
	numbers int // number tokens seen, valid or not
}

// add reads the ranges of one section. A group of exactly two numbers is a
// range when it is a tuple "(a,b)" or sits inside another list "[[a,b]]"; a
// top-level list "[a, b, c]" is a list of single lines. Between these, a-b is
// a range and a lone number a one-line range. Words are skipped, except "to"
// between two numbers; everything else separates.
func (l *list) add(sec section) {
	s := sec.text
	root := &group{closed: true}
	stack := []*group{root}
	top := func() *group { return stack[len(stack)-1] }
	afterNumber, minus := false, false // for telling a range dash from a minus sign
	lastIsNumber := false              // the last token other than spaces was a number
	for i := 0; i < len(s); {
		c := s[i]
		r, size := rune(c), 1
		if c >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		switch {
		case isWordRune(r):
			j := i + size
			for j < len(s) {
				r, size := rune(s[j]), 1
				if s[j] >= utf8.RuneSelf {
					r, size = utf8.DecodeRuneInString(s[j:])
				}
				if !isWordRune(r) {
					break
				}
				j += size
			}
			word := s[i:j]
			switch {
			case allDigits(word):
				// A decimal is one number, not two with a separator:
				// "2.0" is line 2, and "1.5" no line at all, nor any
				// range with it, as a negative number is.
				invalid := minus
				if j+1 < len(s) && s[j] == '.' && s[j+1] >= '0' && s[j+1] <= '9' {
					k := j + 1
					for k < len(s) && s[k] >= '0' && s[k] <= '9' {
						k++
					}
					invalid = invalid || strings.Trim(s[j+1:k], "0") != ""
					j = k
				}
				top().items = append(top().items, item{kind: number, num: atoi(word), neg: invalid})
				l.numbers++
				afterNumber, minus, lastIsNumber = true, false, true
				i = j
				continue
			case afterNumber && strings.EqualFold(word, "to"):
				top().items = append(top().items, item{kind: rangeOp})
			}
			// Other words, element ids among them, are no numbers; they
			// neither join nor separate what is around them.
			minus = false
			afterNumber = afterNumber && !strings.EqualFold(word, "to")
			i = j
			lastIsNumber = false
			continue
		case r == '-' || r == '–' || r == '—' || r == '−':
			if afterNumber {
				top().items = append(top().items, item{kind: rangeOp})
			} else {
				minus = i+size < len(s) && s[i+size] >= '0' && s[i+size] <= '9'
			}
			afterNumber = false
		case r == '.' && strings.HasPrefix(s[i:], ".."):
			if afterNumber {
				top().items = append(top().items, item{kind: rangeOp})
			}
			afterNumber = false
			size = 2
		case r == ' ' || r == '\t' || r == '\r':
			// Spaces keep "3 - 5" and "3 to 5" ranges; a newline does not.
			i += size
			continue
		case (r == '(' || r == '[' || r == '{') && len(stack) < maxNesting:
			g := &group{paren: r == '('}
			top().items = append(top().items, item{kind: subgroup, group: g})
			stack = append(stack, g)
			afterNumber, minus = false, false
		case r == ')' || r == ']' || r == '}':
			if len(stack) > 1 {
				top().closed = true
				stack = stack[:len(stack)-1]
			}
			afterNumber, minus = false, false
		default:
			afterNumber, minus = false, false
		}
		lastIsNumber = false
		i += size
	}
	if !sec.complete {
		dropCutTail(top(), lastIsNumber)
	}
	root.walk(0, &l.ranges)
}

// dropCutTail removes from g, the innermost group open when a possibly
// cut-off section ended, the range it may have been in the middle of: a
// number the text ended in (it may have been going on), with the range
// operator and number before it. A range left waiting for its second number
// ("7-") is dropped by walk anyway.
func dropCutTail(g *group, lastIsNumber bool) {
	items := g.items
	if k := len(items) - 1; lastIsNumber && k >= 0 && items[k].kind == number {
		items = items[:k]
		if k--; k >= 0 && items[k].kind == rangeOp {
			items = items[:k] // "12-4" may have been "12-45"
			if k--; k >= 0 && items[k].kind == number {
				items = items[:k]
			}
		}
	}
	g.items = items
}

func (g *group) walk(depth int, out *[]focusgate.Range) {
	pairShaped := depth > 0 && (g.paren || depth >= 2)
	if pairShaped && len(g.items) == 2 && g.items[0].kind == number && g.items[1].kind == number {
		if g.closed {
			emit(out, g.items[0], g.items[1])
		}
		return
	}
	if pairShaped && !g.closed && !slices.ContainsFunc(g.items, func(it item) bool { return it.kind == subgroup }) {
		return // a tuple cut short, such as "(20,"
	}
	for i := 0; i < len(g.items); i++ {
		it := g.items[i]
		switch {
		case it.kind == subgroup:
			it.group.walk(depth+1, out)
		case it.kind == rangeOp: // with no number before it
		case i+1 < len(g.items) && g.items[i+1].kind == rangeOp:
			if i+2 < len(g.items) && g.items[i+2].kind == number {
				emit(out, it, g.items[i+2])
			}
			// else a range with no end, such as "7-": incomplete
			i += 2
		default:
			emit(out, it, it)
		}
	}
}

// emit appends the range from a to b, unless either is negative.
func emit(out *[]focusgate.Range, a, b item) {
	if !a.neg && !b.neg {
		*out = append(*out, focusgate.Range{From: int(a.num), To: int(b.num)})
	}
}

// isWordRune reports the runes of words: letters, digits and '_', so that
// "a405" and "ea12" are words, not numbers after letters.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= '0' && r <= '9' || r|0x20 >= 'a' && r|0x20 <= 'z' || r == '_'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// atoi reads a run of ASCII digits, saturating at MaxInt32, far beyond any
// line count: a list of a million numbers then takes 16 MB, not 32.
func atoi(s string) int32 {
	v := int64(0)
	for i := 0; i < len(s) && v < math.MaxInt32; i++ {
		v = v*10 + int64(s[i]-'0')
	}
	return int32(min(v, math.MaxInt32))
}

// normalize turns reversed ranges round, clips them to [1,n], drops those
// wholly outside, and merges overlapping or adjacent ones. It returns a new
// slice, sorted and disjoint.
func normalize(rs []focusgate.Range, n int) []focusgate.Range {
	out := make([]focusgate.Range, 0, len(rs))
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
	slices.SortFunc(out, func(a, b focusgate.Range) int { return a.From - b.From })
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
