package detect

import (
	"bytes"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// markKind is a kind of line that opens a prompt section.
type markKind uint8

const (
	heading  markKind = iota + 1 // "## Goal:", "# History of interaction with the task:"
	label                        // "OBJECTIVE: ...", "PREVIOUS ACTION: ..."
	tagOpen                      // "<user_request>"
	tagClose                     // "</user_request>"
	ultimate                     // browser-use's `Your ultimate task is: """..."""`
	field                        // a label a page format registers, whose section is the rest of its line
)

// mark is a line that structures a prompt, and the section it opens.
type mark struct {
	kind  markKind
	level int    // heading level
	name  string // heading title in lower case without its colon; label or tag name
	at    int    // start of the line
	body  int    // start of the section's content
	end   int    // end of the section's content
}

const ultimatePrefix = `Your ultimate task is: """`

// span is a range of offsets.
type span struct{ start, end int }

// scanMarks lists the structuring lines of text outside the trees (sorted spans) and
// outside ``` fences, with the end of the section each one opens: a heading's ends at
// the next heading of the same or a higher level, a label's at the next label or
// heading, a tag's at its closing tag, and every section at the next tree.
func scanMarks(marks []mark, text string, trees []span) []mark {
	fenced := false
	rest := trees
	for p := 0; p < len(text); {
		if len(rest) > 0 && p >= rest[0].start {
			p = max(p, rest[0].end)
			rest = rest[1:]
			continue
		}
		e := lineEnd(text, p)
		line := trimLineEnd(text[p:e])
		next := e + 1
		switch {
		case strings.HasPrefix(line, "```") && !strings.Contains(line[3:], "`"):
			fenced = !fenced
		case fenced || line == "":
		case hasPromptLabel(line):
			name, n := promptLabel(line)
			marks = append(marks, mark{kind: field, name: name, at: p, body: p + n + 1, end: e})
		case line[0] == '#':
			level := len(line) - len(strings.TrimLeft(line, "#"))
			if level <= 6 && level < len(line) && line[level] == ' ' {
				title := strings.TrimSuffix(strings.TrimSpace(line[level:]), ":")
				marks = append(marks, mark{kind: heading, level: level, name: title, at: p, body: next})
			}
		case 'A' <= line[0] && line[0] <= 'Z':
			j := 1
			for j < len(line) && ('A' <= line[j] && line[j] <= 'Z' || line[j] == ' ' || line[j] == '_') {
				j++
			}
			if j >= 2 && j < len(line) && line[j] == ':' {
				marks = append(marks, mark{kind: label, name: strings.TrimSpace(line[:j]), at: p, body: p + j + 1})
			} else if strings.HasPrefix(line, ultimatePrefix) {
				body := p + len(ultimatePrefix)
				if end := strings.Index(text[body:], `"""`); end >= 0 {
					marks = append(marks, mark{kind: ultimate, at: p, body: body, end: body + end})
					next = lineEnd(text, body+end) + 1
				}
			}
		case line[0] == '<' && line[len(line)-1] == '>':
			kind, tag := tagOpen, line[1:len(line)-1]
			if name, ok := strings.CutPrefix(tag, "/"); ok {
				kind, tag = tagClose, name
			}
			if isTagName(tag) {
				marks = append(marks, mark{kind: kind, name: tag, at: p, body: next})
			}
		}
		p = next
	}
	endSections(marks, trees, len(text))
	return marks
}

// trimLineEnd is line without its trailing blanks: strings.TrimRight builds a
// set of its cutset on every call, and scanMarks trims every line of a prompt.
func trimLineEnd(line string) string {
	for len(line) > 0 {
		switch line[len(line)-1] {
		case ' ', '\t', '\r':
			line = line[:len(line)-1]
		default:
			return line
		}
	}
	return line
}

// isTagName says whether s names an XML-like tag as prompts and browser-use
// write them: lowercase letters and underscores.
func isTagName(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return s != ""
}

// endSections sets the end of every section in one backward pass.
func endSections(marks []mark, trees []span, textLen int) {
	var headings [7]int // headings[l]: the next heading of level l
	for l := range headings {
		headings[l] = textLen
	}
	labelOrHeading := textLen
	closing := map[string]int{}
	t := len(trees)
	for i := len(marks) - 1; i >= 0; i-- {
		m := &marks[i]
		nextTree := textLen
		for t > 0 && trees[t-1].start >= m.body {
			t--
		}
		if t < len(trees) {
			nextTree = trees[t].start
		}
		switch m.kind {
		case heading:
			m.end = textLen
			for l := 1; l <= m.level; l++ {
				m.end = min(m.end, headings[l])
			}
			headings[m.level] = m.at
			labelOrHeading = m.at
		case label:
			m.end = labelOrHeading
			labelOrHeading = m.at
		case field:
			labelOrHeading = m.at
		case tagOpen:
			m.end = textLen
			if at, ok := closing[m.name]; ok {
				m.end = at
			}
		case tagClose:
			closing[m.name] = m.at
		}
		m.end = max(min(m.end, nextTree), m.body)
	}
}

func isGoal(m mark) bool {
	switch m.kind {
	case heading:
		return strings.EqualFold(m.name, "goal")
	case label:
		return m.name == "OBJECTIVE"
	case field:
		return isGoalLabel(m.name)
	case tagOpen:
		return m.name == "user_request"
	case ultimate:
		return true
	}
	return false
}

func isHistory(m mark) bool {
	switch m.kind {
	case heading:
		return len(m.name) >= len("history") && strings.EqualFold(m.name[:len("history")], "history")
	case label:
		return m.name == "PREVIOUS ACTION" || m.name == "PREVIOUS ACTIONS" || m.name == "INTERACTION HISTORY"
	case tagOpen:
		return m.name == "agent_history"
	}
	return false
}

func filterMarks(marks []mark, keep func(mark) bool) []mark {
	var kept []mark
	for _, m := range marks {
		if keep(m) {
			kept = append(kept, m)
		}
	}
	return kept
}

// section returns the content of the section, among marks, that belongs to the tree
// starting at treeStart: the last one before the tree, else the first after it.
func section(text string, marks []mark, treeStart int) (string, bool) {
	i := sort.Search(len(marks), func(i int) bool { return marks[i].at >= treeStart })
	switch {
	case i > 0:
		i--
	case i == len(marks):
		return "", false
	}
	return text[marks[i].body:min(marks[i].end, len(text))], true
}

// describe fills in the goal and the history that belong to an observation, and the
// focused element when the agent states it in another part of the message.
func (c *conversation) describe(f located, o *Observation) {
	u := &c.units[f.unit]
	text, _ := c.unitText(f.unit)
	at := c.point(f)
	ctx := c.structure(f.unit)

	goal, ok := section(text, ctx.goals, at)
	if !ok {
		goal, ok = c.earlierGoal(f.unit)
	}
	if !ok {
		goal = c.userText(f.unit)
	}
	history, ok := section(text, ctx.histories, at)
	owned := false
	if !ok {
		history, owned = c.assistantTurns(f.unit)
	}
	// Each is copied out of the text it was cut from, so that what keeps
	// it (a retriever call others wait for) keeps no more; a history from
	// the text of the request's turns stays in it (see turnsFrom).
	o.Goal = c.lastGoal.of(keepHead(strings.TrimSpace(goal), MaxGoalBytes))
	o.History = keepTail(strings.TrimSpace(history), MaxHistoryBytes)
	if !owned {
		o.History = c.lastHistory.of(o.History)
	}

	if o.FocusedBID == "" && u.end-u.first > 1 {
		// The first statement after the tree, else the last before it,
		// read as promptFocus reads text[at:] and text[:at], from where
		// each is, so that a unit of many trees is searched once.
		focus := c.focusStatements(f.unit)
		i := sort.Search(len(focus), func(i int) bool { return focus[i].start >= at })
		if i < len(focus) {
			o.FocusedBID = promptFocus(text[focus[i].start:], false)
		}
		for j := i - 1; o.FocusedBID == "" && j >= 0; j-- {
			if focus[j].end <= at {
				o.FocusedBID = promptFocus(text[focus[j].start:at], true)
				break
			}
		}
	}
}

// copied is the copy of a text last made: the pages of a tool loop share
// their goal, stated once at the conversation's start, and each page's copy
// of it was an allocation of its own.
type copied struct{ from, copy string }

// of returns a copy of s, the one made last when s is the same text.
func (l *copied) of(s string) string {
	if s != l.from {
		l.from, l.copy = s, strings.Clone(s)
	}
	return l.copy
}

// focusStatements lists, once per unit, where its text states a focused
// element (see promptFocus), in order.
func (c *conversation) focusStatements(ui int) []span {
	ctx := c.context(ui)
	if ctx.focusListed {
		return ctx.focus
	}
	ctx.focusListed = true
	text, _ := c.unitText(ui)
	for _, s := range []string{focusHeading, focusInline} {
		for at := 0; ; {
			k := strings.Index(text[at:], s)
			if k < 0 {
				break
			}
			ctx.focus = append(ctx.focus, span{at + k, at + k + len(s)})
			at += k + 1
		}
	}
	slices.SortFunc(ctx.focus, func(a, b span) int { return a.start - b.start })
	return ctx.focus
}

// markBuffers holds the slices scanMarks appends to, for reuse.
var markBuffers = sync.Pool{New: func() any { return new([]mark) }}

// maxPooledMarks bounds the slices markBuffers keeps: a prompt of ten
// thousand headings need not pin their room.
const maxPooledMarks = 1024

// structure finds, once per unit, its goal and history sections.
func (c *conversation) structure(ui int) *unitContext {
	ctx := c.context(ui)
	text, _ := c.unitText(ui) // which may recall the unit's shape, structure and all
	if ctx.structured {
		return ctx
	}
	ctx.structured = true
	// The trees are cut out of the text: each is the point it was at.
	var points [4]int // a unit holds a tree or two
	var spans [4]span
	trees := spans[:0]
	for _, at := range c.points(points[:0], ui) {
		trees = append(trees, span{at, at})
	}
	// The marks are kept only as far as the goals and histories among them,
	// which filterMarks copies: a prompt that describes its actions at
	// length has hundreds, and a tool loop's request a few for each page.
	buf := markBuffers.Get().(*[]mark)
	marks := scanMarks((*buf)[:0], text, trees)
	ctx.goals, ctx.histories = filterMarks(marks, isGoal), filterMarks(marks, isHistory)
	if cap(marks) <= maxPooledMarks {
		clear(marks) // their names are the request's text
		*buf = marks[:0]
		markBuffers.Put(buf)
	}
	return ctx
}

// around returns, once per unit, its text outside its trees, each piece
// between them trimmed and the pieces joined as joinText joins them. Only a
// goal of last resort reads it (words), so it is made when one is asked for,
// not with the unit's structure.
func (c *conversation) around(ui int) string {
	ctx := c.context(ui)
	if ctx.aroundMade {
		return ctx.around
	}
	ctx.aroundMade = true
	text, _ := c.unitText(ui)
	var buf [4]string // a unit holds a tree or two
	parts := buf[:0]
	rest := 0
	var points [4]int
	for _, at := range c.points(points[:0], ui) {
		parts = append(parts, text[rest:at])
		rest = at
	}
	ctx.around = joinText(append(parts, text[rest:])...)
	return ctx.around
}

// nearestAnswer keeps, per unit, the answer of a search through the units before it.
type nearestAnswer struct {
	text      string
	ok, known bool
	at        int // the unit the text is from
}

// nearest returns own(i) for the last unit i <= ui where it is ok, remembering the
// answer for every unit it passes.
func nearest(memos []nearestAnswer, ui int, own func(i int) (string, bool)) (string, bool) {
	i := ui
	var found nearestAnswer
	for ; i >= 0; i-- {
		if memos[i].known {
			found = memos[i]
			break
		}
		if text, ok := own(i); ok {
			found = nearestAnswer{text: text, ok: true}
			break
		}
	}
	found.known = true
	for j := ui; j >= max(i, 0); j-- {
		memos[j] = found
	}
	return found.text, found.ok
}

// goalWords are the words every goal mark contains; user turns without any of them
// are not decoded when looking for a goal.
var goalWords = append([][]byte{[]byte("Goal"), []byte("OBJECTIVE"), []byte("<user_request>"), []byte("ultimate task")}, goalLabelWords()...)

// earlierGoal looks for a goal section in the user turns before unit ui, newest
// first: browser-use, for one, states the task once at the start of the conversation.
func (c *conversation) earlierGoal(ui int) (string, bool) {
	if c.goals == nil {
		c.goals = make([]nearestAnswer, len(c.units))
		c.note(int64(len(c.goals)) * answerSize)
	}
	return nearest(c.goals, ui-1, func(i int) (string, bool) {
		if c.units[i].role != roleUser || !c.mentions(i, goalWords) {
			return "", false
		}
		text, _ := c.unitText(i)
		return section(text, c.structure(i).goals, len(text))
	})
}

func (c *conversation) mentions(ui int, words [][]byte) bool {
	for _, s := range c.segs[c.units[ui].first:c.units[ui].end] {
		raw := c.body[s.lit.start:s.lit.end]
		for _, w := range words {
			if bytes.Contains(raw, w) {
				return true
			}
		}
	}
	return false
}

// userText is the goal of last resort, taken from unit ui and the units
// before it only, so that an observation's goal is the same in every later
// request of its conversation (and so is its cache key). In a tool-calling
// loop (Playwright MCP, chrome-devtools-mcp, the Agents SDK) the task is the
// first thing the user wrote and every page comes back from a tool: the goal
// is that first user message, followed by the user's latest words when they
// have written again since. A user message that holds the tree contributes
// its own words around it as the latest. With no user text at all, the
// agent's instructions (system or developer message, Responses instructions)
// stand in for the task.
func (c *conversation) userText(ui int) string {
	if c.users == nil {
		c.users = make([]nearestAnswer, len(c.units))
		c.note(int64(len(c.users)) * answerSize)
	}
	latest, ok := nearest(c.users, ui, func(i int) (string, bool) { return c.words(i, roleUser) })
	if !ok {
		return c.first(roleSystem, ui)
	}
	if first := c.first(roleUser, ui); first != latest {
		return joinText(first, latest)
	}
	return latest
}

// words returns the text of unit i outside its trees when the unit is
// written by r.
func (c *conversation) words(i int, r role) (string, bool) {
	if c.units[i].role != r {
		return "", false
	}
	around := c.around(i)
	return around, around != ""
}

// first returns the words of the first unit written by r, if it is unit ui
// or comes before it.
func (c *conversation) first(r role, ui int) string {
	if c.firsts == nil {
		c.firsts = map[role]nearestAnswer{}
	}
	m, known := c.firsts[r]
	if !known {
		for i := range c.units {
			if text, ok := c.words(i, r); ok {
				m = nearestAnswer{text: text, ok: true, at: i}
				break
			}
		}
		c.firsts[r] = m
	}
	if !m.ok || m.at > ui {
		return ""
	}
	return m.text
}

// assistantTurns is the history of last resort: what the assistant said and the
// tools it called before unit ui, the newest first when it is too long. owned
// says it is a slice of the text all the request's histories share (see
// turnsFrom), which is not copied for each.
func (c *conversation) assistantTurns(ui int) (history string, owned bool) {
	first, last := -1, -1 // the oldest and newest units of the history
	// Every turn looked at costs at least one byte of the budget, so that a long
	// conversation of empty turns is not walked to its start for every observation.
	for i, budget := ui-1, MaxHistoryBytes; i >= 0 && budget > 0; i-- {
		if c.units[i].role != roleAssistant {
			continue
		}
		t := c.turnText(i)
		if t != "" {
			if last < 0 {
				last = i
			}
			first = i
		}
		budget -= len(t) + 1
	}
	switch {
	case last < 0:
		return "", false
	case first == last:
		return c.turnTexts[first].text, false
	}
	return c.turnsFrom(first, last), true
}

// turnsFrom returns the turns of the assistant units from first to last,
// oldest first, joined by blank lines. The turns are written once per
// request into one text that the histories of a tool loop's pages, each
// the turns before it, are all taken from: written for each page, they
// copied up to MaxHistoryBytes a page. The text holds no more than the
// request's turns, which a history kept past the request keeps with it. It
// starts anew where a history starts after it ends; a history that starts
// before it, which pages described in order never do, is written on its
// own. Every assistant unit from first to last was made by assistantTurns'
// walk.
func (c *conversation) turnsFrom(first, last int) string {
	h := &c.history
	switch {
	case !h.started || first > h.next:
		*h = turnHistory{started: true, first: first, next: first}
	case first < h.first:
		return c.joinTurns(first, last)
	}
	for ; h.next <= last; h.next++ {
		t := &c.turnTexts[h.next]
		if t.text == "" {
			continue // not an assistant's, or empty
		}
		if h.b.Len() > 0 {
			h.b.WriteString("\n\n")
		}
		t.at = h.b.Len()
		h.b.WriteString(t.text)
		c.note(int64(len(t.text) + 2))
	}
	lt := &c.turnTexts[last]
	return h.b.String()[c.turnTexts[first].at : lt.at+len(lt.text)]
}

// joinTurns is turnsFrom written on its own.
func (c *conversation) joinTurns(first, last int) string {
	var parts []string
	for i := first; i <= last; i++ {
		if t := c.turnTexts[i].text; t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n\n")
}

// turn is an assistant unit's text and calls as history shows them.
type turn struct {
	text string
	made bool
	at   int // where text starts in the conversation's history, once written there
}

// turnHistory is the text of a request's assistant turns from unit first
// up to unit next, joined by blank lines (see turnsFrom).
type turnHistory struct {
	b           strings.Builder
	started     bool
	first, next int
}

// turnText is an assistant unit's turn, made once per request: every later
// observation's history walks back over the same turns, and a tool loop has
// a page after each.
func (c *conversation) turnText(ui int) string {
	if c.turnTexts == nil {
		c.turnTexts = make([]turn, len(c.units))
		c.note(int64(len(c.units)) * turnSize)
	}
	if t := &c.turnTexts[ui]; t.made {
		return t.text
	}
	u := &c.units[ui]
	// A turn is its texts and calls as joinText joins them. A lone text is
	// the turn as it is; the others are written into the request's turns, one
	// text for them all, not a string each.
	lone, n := "", len(u.calls)
	for si := u.first; si < u.end; si++ {
		if t := strings.TrimSpace(c.segText(si)); t != "" {
			lone, n = t, n+1
		}
	}
	if n > 1 || len(u.calls) > 0 {
		b := &c.turnsMade
		start := b.Len()
		for si := u.first; si < u.end; si++ {
			if t := strings.TrimSpace(c.segText(si)); t != "" {
				c.turnPart(start)
				b.WriteString(t)
			}
		}
		for _, fn := range u.calls {
			// A call, name(args), ends with a parenthesis: only the
			// start of its name is trimmed.
			c.turnPart(start)
			name := asString(c.body[fn.name.start:fn.name.end])
			if strings.IndexByte(name, '\\') >= 0 {
				name = unquote(name)
			}
			b.WriteString(strings.TrimLeftFunc(name, unicode.IsSpace))
			b.WriteByte('(')
			if args := asString(c.body[fn.args.start:fn.args.end]); fn.raw {
				b.WriteString(args)
			} else {
				unquoteTo(b, args)
			}
			b.WriteByte(')')
		}
		lone = b.String()[start:]
	}
	c.note(int64(len(lone))) // held with the request, like the decoded segments
	c.turnTexts[ui] = turn{text: lone, made: true}
	return lone
}

// turnPart separates a turn's next part, in c.turnsMade, from those of the
// turn since start.
func (c *conversation) turnPart(start int) {
	if c.turnsMade.Len() > start {
		c.turnsMade.WriteString("\n\n")
	}
}

// joinText joins the non-blank texts, trimmed, with blank lines.
func joinText(texts ...string) string {
	size, n, only := 0, 0, ""
	for _, t := range texts {
		if t = strings.TrimSpace(t); t != "" {
			size, n, only = size+len(t), n+1, t
		}
	}
	if n <= 1 {
		return only
	}
	var b strings.Builder
	b.Grow(size + len("\n\n")*(n-1))
	for _, t := range texts {
		if t = strings.TrimSpace(t); t != "" {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(t)
		}
	}
	return b.String()
}

// keepHead keeps at most n bytes from the start of s, cut on a rune boundary.
func keepHead(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// keepTail keeps at most n bytes from the end of s, starting on a line when it can.
func keepTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	t := s[cut:]
	if i := strings.IndexByte(t, '\n'); i >= 0 && i+1 < len(t) {
		t = strings.TrimLeft(t[i+1:], "\r\n")
	}
	return t
}
