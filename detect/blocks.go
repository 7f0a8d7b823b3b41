package detect

import (
	"slices"
	"strings"
	"sync"

	"github.com/focusgate/focusgate"
)

// runFunc collects the elements of one tree from p, and returns them with the
// start of the line after the last one.
type runFunc func(s string, p int, parse parseFunc, buf []element) ([]element, int)

// maxForeign bounds the consecutive lines that no grammar rule reads which a tree
// may hold: a property, role or text line the grammar does not know yet must not
// split a page in two and leave half of it unpruned. Such lines are taken in only
// when they are indented deeper than the tree's first line and an element of the
// tree, also deeper than the first line, follows them: a tree's indentation
// continues through them, while a heading, a blank line or a line at the tree's
// own margin still ends it. They count towards neither MinLines nor MinIDLines.
const maxForeign = 2

// lineRun collects the elements that follow each other from p, and returns them
// with the start of the line after the last one.
func lineRun(s string, p int, parse parseFunc, buf []element) ([]element, int) {
	for p < len(s) {
		el, ok := parse(s, p)
		if !ok {
			if len(buf) == 0 {
				break
			}
			var next int
			if buf, next, ok = foreign(s, p, parse, buf); !ok {
				break
			}
			el, _ = parse(s, next)
		}
		buf = append(buf, el)
		p = el.next
	}
	return buf, p
}

// foreign takes in the short run of unreadable lines at p when the tree goes on
// after it (see maxForeign): it appends them to run as elements without id or
// role and returns the start of the element that follows.
func foreign(s string, p int, parse parseFunc, run []element) ([]element, int, bool) {
	margin := indentWidth(s, run[0].Start)
	n := len(run)
	for k := 0; k < maxForeign && p < len(s); k++ {
		e := lineEnd(s, p)
		if isBlank(s[p:content(s, p, e)]) || indentWidth(s, p) <= margin {
			break
		}
		el := element{next: e + 1}
		el.Start, el.End = p, e
		el.Depth = indentDepth(s, p)
		run = append(run, el)
		if p = e + 1; p >= len(s) {
			break
		}
		if next, ok := parse(s, p); ok && indentWidth(s, p) > margin && next.Start == p {
			return run, p, true
		}
	}
	return run[:n], 0, false
}

// indentWidth is the number of spaces and tabs that start the line at p.
func indentWidth(s string, p int) int {
	i := p
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i - p
}

// indentDepth reads the nesting level of a line no grammar parsed: its tabs, or
// two spaces per level.
func indentDepth(s string, p int) int {
	if t := tabs(s, p, len(s)); t > 0 {
		return t
	}
	return indentWidth(s, p) / 2
}

// accepted applies the thresholds of a block, and the format's own condition.
// Both counts only grow with the run and a format's condition holds for a run
// when it holds for any of its suffixes, so a run that fails fails from every
// later start inside it too.
func (f *spec) accepted(run []element) bool {
	lines, ids := 0, 0
	for _, el := range run {
		if el.counted {
			lines++
		}
		if el.id {
			ids++
		}
	}
	return lines >= MinLines && ids >= MinIDLines && (f.accept == nil || f.accept(run))
}

// collect runs the format's grammar from p.
func (f *spec) collect(s string, p int, buf []element) ([]element, int) {
	if f.run != nil {
		return f.run(s, p, f.parse, buf)
	}
	return lineRun(s, p, f.parse, buf)
}

// screen is a text as the formats' ids tests see it, before any grammar
// reads it: the text, and a walk over its opening brackets, whose counts
// several formats' ids need. The walk goes only as far as the counts asked
// for need, so that a page whose first lines answer costs a few lines, and
// it goes over the text at most once, whichever formats ask.
type screen struct {
	s    string
	next int // where the walk looks for the next '['; len(s) once done
	// The opening brackets walked over: at the start of a line after its
	// tabs, before a digit, and after a space and before a digit.
	lineStart, digit, spaceDigit int
}

// brackets returns *count, one of the walk's counts, once it has reached
// MinIDLines or the walk has reached the end of the text.
func (c *screen) brackets(count *int) int {
	s := c.s
	for *count < MinIDLines && c.next < len(s) {
		i := strings.IndexByte(s[c.next:], '[')
		if i < 0 {
			c.next = len(s)
			break
		}
		i += c.next
		c.next = i + 1
		k := i
		for k > 0 && s[k-1] == '\t' {
			k--
		}
		if k == 0 || s[k-1] == '\n' {
			c.lineStart++
		}
		if i+1 < len(s) && isDigit(s[i+1]) {
			c.digit++
			if i > 0 && s[i-1] == ' ' {
				c.spaceDigit++
			}
		}
	}
	return *count
}

// has reports whether the text holds sub at least MinIDLines times: the
// test of a format whose ids carry a fixed string ("ref=", "uid="). It
// looks for the last byte of sub first: in every cue it is punctuation,
// rare in prose, where a search led by a letter would stop at every word.
func (c *screen) has(sub string) bool {
	s, n := c.s, MinIDLines
	if len(s) < len(sub) {
		return false
	}
	last := sub[len(sub)-1]
	for j := len(sub) - 1; ; j++ {
		k := strings.IndexByte(s[j:], last)
		if k < 0 {
			return false
		}
		j += k
		if s[j+1-len(sub):j+1] == sub {
			if n--; n == 0 {
				return true
			}
		}
	}
}

// Blocks finds every tree in one plain string (used for files given to `focusgate
// prune` and internally).
func Blocks(s string) []Block {
	return searchBlocks(s, true)
}

// searchBlocks is Blocks; with screened unset it parses s with every
// grammar even where the format's ids test says no tree of it can be there,
// which only tests do, to show that the test never hides a tree.
func searchBlocks(s string, screened bool) []Block {
	// failed[g] is where the last rejected run of grammar g ended: a run
	// starting before it is a suffix of the rejected one, and is rejected too.
	// A grammar whose ids the text cannot hold is rejected everywhere at once.
	failed := make([]int, len(grammars))
	live := false
	text := &screen{s: s}
	for g, f := range grammars {
		if !screened || f.ids == nil || f.ids(text) {
			live = true
		} else {
			failed[g] = len(s)
		}
	}
	if !live {
		return nil
	}
	pooled := elementBufs.Get().(*[][]element)
	bufs := *pooled // the same backing array: runs grown below stay pooled
	defer func() {
		// The elements hold strings of s: cleared, a pooled buffer keeps no
		// request's text alive.
		for g := range bufs {
			clear(bufs[g][:cap(bufs[g])])
		}
		elementBufs.Put(pooled)
	}()
	var blocks []Block
	for p := 0; p < len(s); {
		best, bestEnd := -1, 0
		for g := range grammars {
			if p < failed[g] {
				continue
			}
			run, end := grammars[g].collect(s, p, bufs[g][:0])
			bufs[g] = run
			if !grammars[g].accepted(run) {
				failed[g] = end
				continue
			}
			if best < 0 || len(run) > len(bufs[best]) {
				best, bestEnd = g, end
			}
		}
		if best < 0 {
			p = lineEnd(s, p) + 1
			continue
		}
		blocks = append(blocks, newBlock(grammars[best].name, bufs[best]))
		p = bestEnd
	}
	for i := range blocks {
		from, to := 0, len(s)
		if i > 0 {
			from = blocks[i-1].End
		}
		if i+1 < len(blocks) {
			to = blocks[i+1].Start
		}
		if bid := promptFocus(s[blocks[i].End:to], false); bid != "" {
			blocks[i].FocusedBID = bid
		} else if bid := promptFocus(s[from:blocks[i].Start], true); bid != "" {
			blocks[i].FocusedBID = bid
		}
	}
	return blocks
}

// elementBufs lends Blocks one run buffer per grammar. A page's run is
// hundreds of elements of some 70 bytes each, grown by doubling on every
// call otherwise: the largest allocation of detection. It holds pointers,
// since putting a slice header in an interface allocates it.
var elementBufs = sync.Pool{New: func() any {
	bufs := make([][]element, len(grammars))
	return &bufs
}}

// Page returns the tree of a page snapshot given on its own (a file, a
// recorded step): the largest block of s, since a snapshot that reads as
// several trees is still one page. It is false when s holds no tree.
func Page(s string) (Block, bool) {
	blocks := Blocks(s)
	if len(blocks) == 0 {
		return Block{}, false
	}
	return slices.MaxFunc(blocks, func(x, y Block) int { return (x.End - x.Start) - (y.End - y.Start) }), true
}

func newBlock(f Format, run []element) Block {
	b := Block{Start: run[0].Start, End: run[len(run)-1].End, Format: f, Lines: make([]focusgate.Line, len(run))}
	minDepth, votes := run[0].Depth, 0
	for _, el := range run {
		minDepth = min(minDepth, el.Depth)
		votes += int(el.vote)
	}
	for i, el := range run {
		l := el.Line
		l.Start -= b.Start
		l.End -= b.Start
		l.Depth -= minDepth
		b.Lines[i] = l
		if el.focused && el.BID != "" {
			b.FocusedBID = el.BID
		}
	}
	if f == BrowserGym && votes > 0 {
		b.Format = WebArena
	}
	return b
}

// The statements of a focused element an agent writes beside its tree.
const (
	focusHeading = "# Focused element:"
	focusInline  = "[Focused element bid: "
)

// promptFocus reads the focused element an agent states next to its tree:
// GenericAgent's "## Focused element:" section (bid='a12', or None) and OpenHands'
// "[Focused element bid: a12]". It takes the first statement in region, or the last
// one when last is set.
func promptFocus(region string, last bool) string {
	const heading, inline = focusHeading, focusInline
	index := strings.Index
	if last {
		index = strings.LastIndex
	}
	h, in := index(region, heading), index(region, inline)
	if h < 0 && in < 0 {
		return ""
	}
	if in >= 0 && (h < 0 || (in < h) != last) {
		v, _, _ := strings.Cut(region[in+len(inline):], "]")
		return bidValue(v)
	}
	v := region[h+len(heading):]
	for {
		line, rest, found := strings.Cut(v, "\n")
		if line = strings.TrimSpace(line); line != "" || !found {
			if bid, ok := strings.CutPrefix(line, "bid="); ok {
				line = strings.Trim(bid, `'"`)
			}
			return bidValue(line)
		}
		v = rest
	}
}

// bidValue keeps s when it looks like an element id.
func bidValue(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > maxBIDLen || s == "None" || s == "null" {
		return ""
	}
	for i := 0; i < len(s); i++ {
		if !isLetter(s[i]) && !isDigit(s[i]) && s[i] != '-' && s[i] != '_' {
			return ""
		}
	}
	return s
}
