package detect

import (
	"slices"
	"sort"
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
	text  string // the decoded text of all segments, their trees cut out (see unitText)
	bases []int  // offset of each segment in text

	goals, histories []mark // sections outside the unit's trees
	structured       bool

	around     string // the unit's text outside its trees (see around)
	aroundMade bool

	focus       []span // the statements of a focused element in text (see focusStatements)
	focusListed bool

	recalled bool // all of the above is a shape the Finder remembers, shared
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
	seen   *strMemory // the Finder's memory; nil for none
	// written is the Finder's memory of trees written back, handed to each
	// observation; nil for none.
	written *memo.Memo[writing]
	shapes  *memo.Memo[shape] // the Finder's memory of units' shapes; nil for none
	// known are the strings found in seen as the body was read, by the
	// offset of their content: they were searched before, and are not
	// validated or searched again.
	known []knownString
	model string // the last top-level "model" string
	// turnTexts holds, by unit, each assistant unit's text as history shows it
	// (see turnText), made once it is first needed.
	turnTexts []turn
	turnsMade strings.Builder // the texts of turnTexts that are not a segment's
	paths     strings.Builder // the paths segPath made
	history   turnHistory

	lastGoal, lastHistory copied // see describe

	// Room for the states, contexts and lists of calls still to be made,
	// and the size of the last chunk of each (see chunk).
	freeStates                             []segState
	freeContexts                           []unitContext
	freeCalls                              []call
	statesChunk, contextsChunk, callsChunk int

	// The memory held beyond the body, charged to reserve (see account).
	reserve           func(int64) bool
	pending           int64
	segsCap, unitsCap int
	over              bool
}

// knownString is a string of the body the Finder remembers.
type knownString struct {
	start int
	searched
}

// text reads the string literal at c.body[v] that may hold a page, as
// scanString does. A long one that the Finder searched before is recognised
// by its bytes (see strMemory.at): bytes that were a valid string are one
// still, so they are not validated again, and what the search found is kept
// for found.
func (c *conversation) text(v int) (literal, int, error) {
	if r, end, ok := c.seen.at(c.body, v+1); ok {
		c.known = append(c.known, knownString{start: v + 1, searched: r})
		return literal{start: v + 1, end: end}, end + 1, nil
	}
	return scanString(c.body, v)
}

// textOrSkip is stringOrSkip for a string that may hold a page (see text).
func (c *conversation) textOrSkip(v, depth int) (lit literal, next int, ok bool, err error) {
	if v < len(c.body) && c.body[v] == '"' {
		lit, next, err = c.text(v)
		return lit, next, err == nil, err
	}
	next, err = skipValue(c.body, v, depth)
	return lit, next, false, err
}

// remembered returns what the Finder remembered of the string whose content
// starts at start, found as the body was read (in order, so known is sorted).
func (c *conversation) remembered(start int) (searched, bool) {
	i := sort.Search(len(c.known), func(i int) bool { return c.known[i].start >= start })
	if i < len(c.known) && c.known[i].start == start {
		return c.known[i].searched, true
	}
	return searched{}, false
}

// walkers lists, for each API, how its bodies hold the conversation: the
// one place detection knows an API's body. Each is a description, read by
// the skeleton in walk.go.
var walkers = []*walker{&chatWalker, &responsesWalker, &messagesWalker, &geminiWalker, &converseWalker}

func parseConversation(body []byte, api focusgate.API, seen *strMemory, reserve func(int64) bool) (*conversation, error) {
	c := &conversation{body: body, w: walkerOf(api), seen: seen, reserve: reserve}
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

// segPath is the gjson path of segment s of unit u, written into the text
// the paths of the request's pages share.
func (c *conversation) segPath(u *unit, s *segment) string {
	var buf [128]byte
	p := append(buf[:0], u.top...)
	if u.index >= 0 {
		p = strconv.AppendInt(append(p, '.'), int64(u.index), 10)
	}
	if s.field != "" {
		p = append(append(p, '.'), s.field...)
	}
	if s.part >= 0 {
		p = strconv.AppendInt(append(p, '.'), int64(s.part), 10)
	}
	if s.result {
		p = append(append(p, '.'), c.w.turn.holds.parts.nested...)
	}
	if s.sub >= 0 {
		p = strconv.AppendInt(append(p, '.'), int64(s.sub), 10)
	}
	if s.leaf != "" {
		p = append(append(p, '.'), s.leaf...)
	}
	if len(p) == len(u.top) {
		return u.top
	}
	start := c.paths.Len()
	c.paths.Write(p)
	return c.paths.String()[start:]
}

func (c *conversation) decode(lit literal) string {
	return unquote(asString(c.body[lit.start:lit.end]))
}

func (c *conversation) segText(si int) string {
	s := c.state(si)
	if r, ok := c.remembered(c.segs[si].lit.start); ok && !s.decoded {
		s.text, s.decoded = r.text, true
	}
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
		if len(c.freeStates) == 0 {
			c.freeStates = make([]segState, chunk(&c.statesChunk, 16))
			c.note(int64(len(c.freeStates)) * segStateSize)
		}
		s.state, c.freeStates = &c.freeStates[0], c.freeStates[1:]
	}
	return s.state
}

// context returns the lazily built context of unit ui.
func (c *conversation) context(ui int) *unitContext {
	u := &c.units[ui]
	if u.ctx == nil {
		if len(c.freeContexts) == 0 {
			c.freeContexts = make([]unitContext, chunk(&c.contextsChunk, 8))
		}
		u.ctx, c.freeContexts = &c.freeContexts[0], c.freeContexts[1:]
	}
	return u.ctx
}

// chunk returns the size of the next chunk of a kind of element, twice the
// last one, *n, from 2 up to most. States, contexts and lists of calls are
// made a chunk at a time: a tool loop's request has a page, a unit and a
// call for every step, and made one by one they were a fifth of its
// allocations. Chunks that start small keep a request of a page or two as
// small as it was.
func chunk(n *int, most int) int {
	*n = min(max(2**n, 2), most)
	return *n
}

// unitText is the decoded text of all segments of a unit with their trees
// cut out, and the offset of each segment in it. What is looked for around a
// tree (its goal, its history, the focused element) is never inside a tree,
// and a page is most of the bytes of its unit: each tree leaves a point, its
// segment's base plus where it started less the trees before it (point).
// Text parts are joined so that a part boundary is always a line boundary:
// AgentLab writes "## Goal:\n" as one part and the goal as the next, and both
// must read as one section.
func (c *conversation) unitText(ui int) (string, []int) {
	u, ctx := &c.units[ui], c.context(ui)
	if ctx.bases != nil || c.recallShape(ui, ctx) {
		return ctx.text, ctx.bases
	}
	ctx.bases = make([]int, u.end-u.first)
	if len(ctx.bases) == 1 && len(c.found(ui, u.first)) == 0 {
		ctx.text = c.segText(u.first)
		return ctx.text, ctx.bases
	}
	// Sized first: the text is tens of kilobytes in the prompts of
	// frameworks that describe their actions at length, and growing it
	// copied it several times over.
	size := 0
	for si := u.first; si < u.end; si++ {
		size += len(c.segText(si)) + 1
		for _, tr := range c.found(ui, si) {
			size -= tr.at.end - tr.at.start
		}
	}
	var sb strings.Builder
	sb.Grow(size)
	// Whether the segments joined whole so far would be empty, and end
	// with a line break: how a part boundary is made a line boundary does
	// not depend on the trees cut out.
	empty, broken := true, false
	for si := u.first; si < u.end; si++ {
		t := c.segText(si)
		if !empty && !broken && !strings.HasPrefix(t, "\n") {
			sb.WriteByte('\n')
			broken = true
		}
		if t != "" {
			empty, broken = false, t[len(t)-1] == '\n'
		}
		ctx.bases[si-u.first] = sb.Len()
		at := 0
		for _, tr := range c.found(ui, si) {
			sb.WriteString(t[at:tr.at.start])
			at = tr.at.end
		}
		sb.WriteString(t[at:])
	}
	ctx.text = sb.String()
	c.note(int64(len(ctx.text) + 8*len(ctx.bases)))
	return ctx.text, ctx.bases
}

// point is where tree f was in the text of its unit, which it is cut out of
// (see unitText).
func (c *conversation) point(f located) int {
	_, bases := c.unitText(f.unit)
	return bases[f.seg-c.units[f.unit].first] + f.t.at.start - f.t.skip
}

// tree is a tree found in a segment's string, through any stack of
// wrappers: block, in text, the innermost text that holds it; at, the tree
// as it lies in the segment's decoded text; places, its lines as they lie in
// the string's escaped content, from the literal's start; nested, the JSON
// encodings between the segment's text and text.
type tree struct {
	block  Block
	text   string
	at     span
	places []place
	nested int
	cut    bool
	skip   int // the bytes of the segment's trees before this one
	known  *focusgate.Known
}

// located is a tree found in one segment of one unit.
type located struct {
	unit, seg int
	t         *tree
}

// appendTrees appends the trees of segment si of unit ui to dst, in text
// order.
func (c *conversation) appendTrees(dst []located, ui, si int) []located {
	ts := c.found(ui, si)
	for k := range ts {
		dst = append(dst, located{unit: ui, seg: si, t: &ts[k]})
	}
	return dst
}

// points appends to dst where each tree of unit ui was in its text (see
// unitText), in text order.
func (c *conversation) points(dst []int, ui int) []int {
	u := &c.units[ui]
	for si := u.first; si < u.end; si++ {
		ts := c.found(ui, si)
		for k := range ts {
			dst = append(dst, c.point(located{unit: ui, seg: si, t: &ts[k]}))
		}
	}
	return dst
}

func (c *conversation) observations(opts Options) []Observation {
	var found []located
	if opts.All {
		for ui, u := range c.units {
			for si := u.first; si < u.end; si++ {
				if c.account() != nil {
					return nil
				}
				found = c.appendTrees(found, ui, si)
			}
		}
	} else {
		want := max(opts.Newest, 1)
	newest:
		for ui := len(c.units) - 1; ui >= 0; ui-- {
			for si := c.units[ui].end - 1; si >= c.units[ui].first; si-- {
				if c.account() != nil {
					return nil
				}
				ts := c.found(ui, si)
				for k := len(ts) - 1; k >= 0 && len(found) < want; k-- {
					found = append(found, located{unit: ui, seg: si, t: &ts[k]})
				}
				if len(found) == want {
					break newest
				}
			}
		}
		slices.Reverse(found)
	}
	if len(found) == 0 {
		return nil
	}
	obs := make([]Observation, len(found))
	c.paths.Grow(len(found) * 32) // the pages' paths share one text (see segPath)
	for i, f := range found {
		s, t := &c.segs[f.seg], f.t
		obs[i] = Observation{
			Block:    t.block,
			Text:     t.text[t.block.Start:t.block.End],
			Path:     c.segPath(&c.units[f.unit], s),
			RawStart: s.lit.start + t.places[0].start,
			RawEnd:   s.lit.start + t.places[len(t.places)-1].end,
			Nested:   t.nested,
			Cut:      t.cut,
			Known:    t.known,
			places:   t.places,
			base:     s.lit.start,
			written:  c.written,
		}
		c.describe(f, &obs[i])
	}
	return obs
}

// found returns the trees of segment si of unit ui. Strings with fewer lines
// or element ids than a tree needs are never decoded; the others are looked
// up in the Finder's memory first.
func (c *conversation) found(ui, si int) []tree {
	if s := c.segs[si].state; s != nil && s.scanned {
		return s.trees
	}
	if u := &c.units[ui]; !u.role.mayHoldTree() || u.prompt && c.w.quietPrompt {
		return nil
	}
	lit := c.segs[si].lit
	if r, ok := c.remembered(lit.start); ok {
		s := c.state(si)
		s.searched, s.decoded, s.scanned = r, true, true
		return s.trees
	}
	if lit.newlines < MinLines-1 && lit.nested < MinLines-1 {
		return nil
	}
	raw := c.body[lit.start:lit.end]
	if !enoughIDs(raw, MinIDLines) && !hasIDCues(asString(raw)) {
		return nil
	}
	s := c.state(si)
	s.scanned = true
	if r, ok := c.seen.get(raw); ok {
		s.searched, s.decoded = r, true
		return s.trees
	}
	text := c.segText(si)
	if c.account() != nil {
		return nil // the text alone is more than inspection may hold
	}
	// The views the layers peel out of the text are charged as they are
	// made, so that a body too large to inspect stops being searched as
	// soon as that shows, not once the search is done.
	hits, ok := findTrees(text, func(n int64) bool {
		c.note(n)
		return c.account() == nil
	})
	if !ok {
		return nil
	}
	if len(hits) > 0 {
		s.trees = make([]tree, len(hits))
		skip := 0
		for k, h := range hits {
			at := h.at()
			s.trees[k] = tree{block: h.block, text: h.text, at: at, places: h.places, nested: h.nested, cut: h.cut, skip: skip, known: new(focusgate.Known)}
			skip += at.end - at.start
		}
		// The places move from the decoded text onto the escaped one.
		placeEscaped(asString(raw), 0, hits)
	}
	size, peeled := searchedSize(text, s.trees)
	c.note(int64(size - len(text) - peeled)) // the text was noted when decoded, the views as they were peeled
	s.id = stringIDs.Add(1)
	c.seen.put(raw, s.searched, size)
	return s.trees
}

// searchedSize approximates the bytes a remembered string holds beyond its
// escaped key: its text, each tree's lines and places, and each innermost
// text peeled out of it. The search charged the texts it peeled as it made
// them; the rest is charged (noted) once it is done.
func searchedSize(text string, trees []tree) (size, peeled int) {
	const lineSize, placeSize = int(unsafe.Sizeof(focusgate.Line{})), int(unsafe.Sizeof(place{}))
	const treeSize = int(unsafe.Sizeof(tree{})+unsafe.Sizeof(focusgate.Known{})) + 64 // and a Known with a count or two
	size = len(text)
	for i, t := range trees {
		if unsafe.StringData(t.text) != unsafe.StringData(text) && (i == 0 || unsafe.StringData(t.text) != unsafe.StringData(trees[i-1].text)) {
			peeled += len(t.text)
		}
		size += treeSize + len(t.block.Lines)*(lineSize+placeSize)
	}
	return size + peeled, peeled
}
