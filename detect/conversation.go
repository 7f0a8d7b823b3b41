package detect

import (
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/internal/memo"
)

// role is who wrote a unit of the conversation.
type role uint8

const (
	roleOther role = iota
	roleSystem
	roleUser
	roleAssistant
	roleTool
)

func parseRole(raw []byte) role {
	switch string(raw) {
	case "system", "developer":
		return roleSystem
	case "user":
		return roleUser
	case "assistant":
		return roleAssistant
	case "tool", "function":
		return roleTool
	}
	return roleOther
}

// mayHoldTree says whether a role's text is searched for observations. Assistant
// turns are the model's own words; a tree there is a quotation, not a page.
func (r role) mayHoldTree() bool {
	return r == roleSystem || r == roleUser || r == roleTool
}

// segment is one JSON string of a unit that holds text: a message's
// content, one of its text parts, a string in a tool result, or a function
// call's output. Its path in the body is the unit's, then field, part,
// the walker's path to a tool result's content when result is set, sub and
// leaf, each when it has one.
type segment struct {
	lit   literal
	field string // member of the unit that holds the text; "" when the unit is the string itself
	// leaf is the path of the string inside its part or its sub: "text"
	// for a text part, the dotted path of a string in a JSON value
	// ("output", "json.rows.0"), or "" when the string is the part.
	leaf string
	part int32 // index in that member's array of parts, or -1 when the member is the string
	sub  int32 // index in the array of the part's tool result, or -1
	// result says the string is in a tool result the part holds.
	result bool
	// state is what was learnt of the string once it was looked at, nil
	// before: a body can hold a million short strings that never are, and
	// each segment's size counts then.
	state *segState
}

// segState is what a segment's string gave once looked at: its decoded
// text, and, once scanned, the trees in it and those inside a JSON text it
// holds.
type segState struct {
	searched
	decoded, scanned bool
}

// call is a tool call made by an assistant turn, kept as history.
type call struct {
	name, args literal
	raw        bool // args is a JSON value (a Messages API tool_use input), not a string's content
}

// unit is one turn of the conversation: a chat message, a Responses input item, or
// the Responses instructions. It stays small: a long conversation has many.
type unit struct {
	role       role
	prompt     bool   // the unit is the instructions (its walker's prompt member), not a message
	top        string // member of the body that holds the unit: "messages", "input", "instructions", "contents", ...
	index      int    // position in that member's array, or -1
	first, end int    // the unit's segments are conversation.segs[first:end]
	calls      []call
	ctx        *unitContext // built for the few units an observation needs
}

// unitContext is what the search for goals and histories learns about a unit.
type unitContext struct {
	text  string // the decoded text of all segments
	bases []int  // offset of each segment in text

	goals, histories []mark // sections outside the unit's trees
	around           string // the unit's text outside its trees
	structured       bool
}

// conversation is a parsed request body.
type conversation struct {
	body  []byte
	w     *walker // how the body's API holds its conversation
	path  []byte  // scratch for the paths of strings in JSON values
	units []unit
	segs  []segment
	goals []nearestAnswer // goals[i]: the goal stated in the user turns up to unit i
	users []nearestAnswer // users[i]: the user's words up to unit i
	// firsts holds, by role, the words of the first unit of that role
	// that has any.
	firsts map[role]nearestAnswer
	seen   *memo.Memo[searched] // the Finder's memory; nil for none
	model  string               // the last top-level "model" string

	// The memory held beyond the body, charged to reserve (see account).
	reserve           func(int64) bool
	pending           int64
	segsCap, unitsCap int
	over              bool
}

// walkers lists, for each API, how its bodies hold the conversation: the
// one place detection knows an API's body. Each is a description, read by
// the skeleton in walk.go.
var walkers = []*walker{&chatWalker, &responsesWalker, &messagesWalker, &geminiWalker, &converseWalker}

func parseConversation(body []byte, api focusgate.API, reserve func(int64) bool) (*conversation, error) {
	c := &conversation{body: body, w: walkerOf(api), reserve: reserve}
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, syntaxError(i, "expected object")
	}
	var instructions *unit
	i, err := eachMember(body, i, 0, func(key []byte, v int) (int, error) {
		return c.member(c.w, string(key), v, &instructions)
	})
	if err != nil {
		return nil, err
	}
	if i = skipSpace(body, i); i != len(body) {
		return nil, syntaxError(i, "data after the top-level value")
	}
	if instructions != nil {
		// Instructions (the Messages API's system) come before every input
		// item, whatever the member order.
		c.units = append([]unit{*instructions}, c.units...)
	}
	if err := c.account(); err != nil {
		return nil, err
	}
	return c, nil
}

// countMessages returns the number of messages or input items the units were
// read from: the units of one message (a Messages API message's runs of text
// and of tool results) count once, and the system prompt or instructions not
// at all.
func (c *conversation) countMessages() int {
	n := 0
	for i, u := range c.units {
		switch {
		case u.prompt:
		case i > 0 && u.index >= 0 && c.units[i-1].top == u.top && c.units[i-1].index == u.index:
		default:
			n++
		}
	}
	return n
}

// forget empties the units read from an earlier occurrence of the top-level
// member top, which a later one replaces.
func (c *conversation) forget(top string) {
	for i := range c.units {
		if u := &c.units[i]; u.top == top {
			u.role, u.first, u.calls = roleOther, u.end, nil
		}
	}
}

// segPath is the gjson path of segment s of unit u.
func (c *conversation) segPath(u *unit, s *segment) string {
	p := u.top
	if u.index >= 0 {
		p += "." + strconv.Itoa(u.index)
	}
	if s.field != "" {
		p += "." + s.field
	}
	if s.part >= 0 {
		p += "." + strconv.Itoa(int(s.part))
	}
	if s.result {
		p += "." + c.w.turn.holds.parts.nested
	}
	if s.sub >= 0 {
		p += "." + strconv.Itoa(int(s.sub))
	}
	if s.leaf != "" {
		p += "." + s.leaf
	}
	return p
}

func (c *conversation) decode(lit literal) string {
	return unquote(c.body[lit.start:lit.end])
}

func (c *conversation) segText(si int) string {
	s := c.state(si)
	if !s.decoded {
		c.note(int64(c.segs[si].lit.end - c.segs[si].lit.start))
		s.text, s.decoded = c.decode(c.segs[si].lit), true
	}
	return s.text
}

// state returns the state of segment si, made on first use.
func (c *conversation) state(si int) *segState {
	s := &c.segs[si]
	if s.state == nil {
		s.state = &segState{}
		c.note(segStateSize)
	}
	return s.state
}

// context returns the lazily built context of unit ui.
func (c *conversation) context(ui int) *unitContext {
	u := &c.units[ui]
	if u.ctx == nil {
		u.ctx = &unitContext{}
	}
	return u.ctx
}

// unitText is the decoded text of all segments of a unit, with the offset of each
// segment in it. Text parts are joined so that a part boundary is always a line
// boundary: AgentLab writes "## Goal:\n" as one part and the goal as the next, and
// both must read as one section.
func (c *conversation) unitText(ui int) (string, []int) {
	u, ctx := &c.units[ui], c.context(ui)
	if ctx.bases != nil {
		return ctx.text, ctx.bases
	}
	ctx.bases = make([]int, u.end-u.first)
	if len(ctx.bases) == 1 {
		ctx.text = c.segText(u.first)
		return ctx.text, ctx.bases
	}
	var sb strings.Builder
	for si := u.first; si < u.end; si++ {
		t := c.segText(si)
		if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "\n") && !strings.HasPrefix(t, "\n") {
			sb.WriteByte('\n')
		}
		ctx.bases[si-u.first] = sb.Len()
		sb.WriteString(t)
	}
	ctx.text = sb.String()
	c.note(int64(len(ctx.text) + 8*len(ctx.bases)))
	return ctx.text, ctx.bases
}

// located is a block found in one segment of one unit. For a tree inside an
// escaped string held by the segment, in is set and block spans the tree as
// it lies, escaped, in the segment's text: the spans of a segment's trees
// never overlap, however many a string holds.
type located struct {
	unit, seg int
	block     Block
	in        *inner
}

// trees lists the trees of segment si of unit ui in text order.
func (c *conversation) trees(ui, si int) []located {
	var found []located
	for _, b := range c.blocks(ui, si) {
		found = append(found, located{unit: ui, seg: si, block: b})
	}
	var inners []inner
	if s := c.segs[si].state; s != nil {
		inners = s.inner
	}
	for k := range inners {
		in := &inners[k]
		found = append(found, located{unit: ui, seg: si, block: Block{Start: in.at.start, End: in.at.end}, in: in})
	}
	slices.SortStableFunc(found, func(a, b located) int { return a.block.Start - b.block.Start })
	return found
}

func (c *conversation) observations(opts Options) []Observation {
	var found []located
	if opts.All {
		for ui, u := range c.units {
			for si := u.first; si < u.end; si++ {
				if c.account() != nil {
					return nil
				}
				found = append(found, c.trees(ui, si)...)
			}
		}
	} else {
	newest:
		for ui := len(c.units) - 1; ui >= 0; ui-- {
			for si := c.units[ui].end - 1; si >= c.units[ui].first; si-- {
				if c.account() != nil {
					return nil
				}
				if fs := c.trees(ui, si); len(fs) > 0 {
					found = append(found, fs[len(fs)-1])
					break newest
				}
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	obs := make([]Observation, len(found))
	for i := 0; i < len(found); {
		if found[i].in != nil {
			obs[i] = c.innerObservation(found[i])
			i++
			continue
		}
		// Map the spans of all observations of one segment in one pass.
		n := 1
		for i+n < len(found) && found[i+n].seg == found[i].seg && found[i+n].in == nil {
			n++
		}
		spans := make([]span, n)
		for k, f := range found[i : i+n] {
			spans[k] = span{f.block.Start, f.block.End}
		}
		s := &c.segs[found[i].seg]
		text := c.segText(found[i].seg)
		lit := c.body[s.lit.start:s.lit.end]
		for k, raw := range rawSpans(lit, text, spans) {
			f := found[i+k]
			if !onLines(text, f.block.Start, f.block.End) {
				// A tree after an envelope on its first line.
				at := rawOffsets(lit, []int{f.block.Start, f.block.End})
				raw = span{at[0], at[1]}
			}
			o := Observation{
				Block:    f.block,
				Text:     text[f.block.Start:f.block.End],
				Path:     c.segPath(&c.units[f.unit], s),
				RawStart: s.lit.start + raw.start,
				RawEnd:   s.lit.start + raw.end,
			}
			c.describe(f, &o)
			obs[i+k] = o
		}
		i += n
	}
	return obs
}

// onLines says whether text[start:end] starts at a line start and ends at a
// line end, as rawSpans needs.
func onLines(text string, start, end int) bool {
	return (start == 0 || text[start-1] == '\n') && (end == len(text) || text[end] == '\n')
}

// innerObservation describes a tree found inside a JSON text held by a segment.
func (c *conversation) innerObservation(f located) Observation {
	s := &c.segs[f.seg]
	at := rawOffsets(c.body[s.lit.start:s.lit.end], []int{f.in.at.start, f.in.at.end})
	o := Observation{
		Block:    f.in.block,
		Text:     f.in.text[f.in.block.Start:f.in.block.End],
		Path:     c.segPath(&c.units[f.unit], s),
		RawStart: s.lit.start + at[0],
		RawEnd:   s.lit.start + at[1],
		Nested:   f.in.nested,
	}
	c.describe(f, &o)
	return o
}

// blocks returns the trees of segment si of unit ui, and finds those inside a
// JSON text it holds. Strings with fewer lines or element ids than a tree needs
// are never decoded; the others are looked up in the Finder's memory first.
func (c *conversation) blocks(ui, si int) []Block {
	if s := c.segs[si].state; s != nil && s.scanned {
		return s.blocks
	}
	if u := &c.units[ui]; !u.role.mayHoldTree() || u.prompt && c.w.quietPrompt {
		return nil
	}
	lit := c.segs[si].lit
	if lit.newlines < MinLines-1 && lit.nested < MinLines-1 {
		return nil
	}
	raw := c.body[lit.start:lit.end]
	if lit.ids < MinIDLines && !hasIDCues(raw) {
		return nil
	}
	s := c.state(si)
	s.scanned = true
	if r, ok := c.seen.GetBytes(raw); ok {
		s.searched, s.decoded = r, true
		return s.blocks
	}
	text := c.segText(si)
	for _, h := range findTrees(text) {
		if h.nested == 0 {
			s.blocks = append(s.blocks, h.block)
		} else {
			s.inner = append(s.inner, inner{block: h.block, text: h.text, at: h.at, nested: h.nested})
		}
	}
	size := searchedSize(text, s.blocks, s.inner)
	c.note(int64(size - len(text))) // the text was noted when decoded
	c.seen.PutBytes(raw, searched{text: text, blocks: s.blocks, inner: s.inner}, size)
	return s.blocks
}

// searchedSize approximates the bytes a remembered string holds beyond its
// escaped key.
func searchedSize(text string, blocks []Block, inner []inner) int {
	const lineSize, blockSize = int(unsafe.Sizeof(focusgate.Line{})), int(unsafe.Sizeof(Block{}))
	n := len(text)
	for _, b := range blocks {
		n += blockSize + len(b.Lines)*lineSize
	}
	for i, in := range inner {
		if i == 0 || in.text != inner[i-1].text {
			n += len(in.text)
		}
		n += int(unsafe.Sizeof(in)) + len(in.block.Lines)*lineSize
	}
	return n
}
