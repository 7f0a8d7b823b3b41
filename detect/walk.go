package detect

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/focusgate/focusgate"
)

// Every API this package reads holds its conversation the same way: an
// array of turns, each with a role and its content, a string or a list of
// parts; parts are text, tool results (whose content is a string, a list of
// text parts, or a JSON value) and tool calls (kept as history). What
// differs is names: which members hold what, how a part says what it is.
// So each API is a walker, a description of its body (chat.go, messages.go,
// gemini.go, converse.go), registered in walkers (conversation.go), and one
// skeleton, below, reads the turns of all of them.

// walker describes the request bodies of one API: which top-level members
// hold the conversation and how each is read.
type walker struct {
	api focusgate.API
	// model is the top-level member that names the action model; "" when
	// only the request's path does (Converse).
	model string
	// prompt is the top-level member that holds the agent's instructions,
	// which come before every turn whatever the member order, read as
	// promptHolds says; "" when the conversation has none the goal may
	// fall back on.
	prompt      string
	promptHolds contentShape
	// quietPrompt says the instructions are read for the goal only, never
	// searched for pages.
	quietPrompt bool
	// turns are the members that hold the conversation, each an array of
	// turns, named by their dotted path from the top
	// ("generateContentRequest.contents"). No two start with the same
	// member.
	turns []string
	// lone is the role of a turns member that is a string, the words of
	// one turn (Responses' input); roleOther when such a member holds
	// nothing.
	lone role
	turn turnShape
}

// turnShape is how one turn is read.
type turnShape struct {
	role    string            // member naming the turn's role
	roles   func([]byte) role // reads its value, escapes decoded
	unnamed role              // the role of a turn without one
	// content is the member that holds the turn's text, read as holds
	// says.
	content string
	holds   contentShape
	// calls is a member that holds a list of tool calls apart from the
	// content (chat's tool_calls), each element holding a call read by
	// call.
	calls string
	call  callShape
	// kind is a member whose value says what the turn is (Responses'
	// "type"), and kinds what each value makes of it; a value not listed
	// makes a turn of no role that holds nothing. "" when every turn is a
	// message whose text is in content.
	kind  string
	kinds []turnKind
}

// turnKind is what a turn of one kind holds.
type turnKind struct {
	name    string // the kind member's value; "" for a turn without one
	role    role   // the role the kind gives the turn; roleOther keeps the turn's own
	content string // the member that holds its text, read as the turn's holds says; "" for none
	// call says the turn is itself a tool call, its name and arguments
	// members read by the turn's call.
	call bool
}

// contentShape is how a member that holds text is read.
type contentShape struct {
	text  bool       // a string is the text itself
	parts *partShape // a list is read part by part; nil: a list holds nothing
}

// partKind is what a part holds.
type partKind uint8

const (
	partNone   partKind = iota // nothing searched, nothing kept
	partText                   // text, in its text member
	partNested                 // a tool result's content or a JSON value, under its nested member
	partCall                   // a tool call
)

// partShape is how each part of a list is read.
type partShape struct {
	// typ is the member whose value names a part's kind, looked up in
	// types ("" for a part without one); a value not listed holds nothing.
	// When typ is "", a part is known by which of its members it has: a
	// nested one, else a text that is the user's, else a named call.
	typ   string
	types map[string]partKind
	text  string // member that holds a text part's text
	// nested is the dotted path from a part to what it nests: a tool
	// result's content when result is set, read as holds says, or, when
	// holds is nil, a JSON value whose every string is text, to
	// maxValueDepth levels down (Gemini's functionResponse.response,
	// Converse's json).
	nested string
	holds  *contentShape
	result bool
	call   callShape
	// aside is a member that, set to true, makes a text part the model's
	// own thought (Gemini's "thought"): never searched, never history.
	aside string
	// harness says a text part is the client's own note to the model, not
	// the user's words: never searched, never part of a goal.
	harness func(raw []byte) bool
}

// callShape is how a tool call is read.
type callShape struct {
	// at is the member that holds the call's object; "" when the call's
	// members are those of the part or turn itself.
	at         string
	name, args string // members holding its name and its arguments
	// raw says the arguments are a JSON value (Messages' input, Gemini's
	// args), not a string holding one (chat's arguments).
	raw bool
}

// maxValueDepth bounds how deep into a JSON value strings are looked for.
const maxValueDepth = 6

// is says whether key is the member name, which a description leaves ""
// when it has no such member.
func is(key, name string) bool {
	return name != "" && key == name
}

// walkerOf returns the walker of an API; an API without one has none of
// its members read but the model.
func walkerOf(api focusgate.API) *walker {
	for _, w := range walkers {
		if w.api == api {
			return w
		}
	}
	return &unknownAPI
}

var unknownAPI = walker{model: "model"}

// member reads the top-level member key, at v, of a body of w's API; a
// member that is the instructions sets *instructions.
func (c *conversation) member(w *walker, key string, v int, instructions **unit) (int, error) {
	b := c.body
	switch {
	case is(key, w.model):
		lit, next, ok, err := stringOrSkip(b, v, 1)
		if c.model = ""; ok {
			c.model = c.decode(lit)
		}
		return next, err
	case is(key, w.prompt):
		u := unit{role: roleSystem, top: w.prompt, index: -1, first: len(c.segs), prompt: true}
		next, err := c.content(&w.promptHolds, segment{part: -1, sub: -1}, v, 1, nil)
		u.end = len(c.segs)
		*instructions = nil
		if u.end > u.first {
			*instructions = &u
		}
		return next, err
	}
	for _, top := range w.turns {
		if head, rest, _ := strings.Cut(top, "."); key == head {
			return c.along(w, top, rest, v, 1)
		}
	}
	return skipValue(b, v, 1)
}

// along reads the value at v, at depth d, on the way to the turns member
// top, of which rest is what is left of the path. Of duplicate members,
// JSON readers keep the last: what focusgate prunes and counts must be what
// the upstream reads, so what an earlier duplicate gave is forgotten first.
func (c *conversation) along(w *walker, top, rest string, v, d int) (int, error) {
	c.forget(top)
	if rest == "" {
		return c.turns(w, top, v, d)
	}
	if c.body[v] != '{' {
		return skipValue(c.body, v, d)
	}
	head, rest, _ := strings.Cut(rest, ".")
	return eachMember(c.body, v, d, func(key []byte, v int) (int, error) {
		if string(key) == head {
			return c.along(w, top, rest, v, d+1)
		}
		return skipValue(c.body, v, d+1)
	})
}

// turns reads the array of turns at v, at depth d, the member top.
func (c *conversation) turns(w *walker, top string, v, d int) (int, error) {
	b := c.body
	switch {
	case b[v] == '"' && w.lone != roleOther:
		lit, next, err := c.text(v)
		c.segs = append(room(c.segs), segment{lit: lit, part: -1, sub: -1})
		c.units = append(room(c.units), unit{role: w.lone, top: top, index: -1, first: len(c.segs) - 1, end: len(c.segs)})
		return next, err
	case b[v] != '[':
		return skipValue(b, v, d)
	}
	return c.eachObject(v, d, func(n, m int) (int, error) {
		return c.turn(&w.turn, top, n, m, d+1)
	})
}

// eachObject walks the array at v, at depth d, like eachElement, and calls
// obj with each element that is an object; it charges the reserve for what
// each element before it added.
func (c *conversation) eachObject(v, d int, obj func(n, o int) (int, error)) (int, error) {
	b := c.body
	return eachElement(b, v, d, func(n, e int) (int, error) {
		if err := c.account(); err != nil {
			return e, err
		}
		if b[e] != '{' {
			return skipValue(b, e, d+1)
		}
		return obj(n, e)
	})
}

// turn reads turn n of the member top, the object at m at depth d, into
// units: see addTurn.
func (c *conversation) turn(t *turnShape, top string, n, m, d int) (int, error) {
	b := c.body
	r, first := t.unnamed, len(c.segs)
	var kind literal
	var kinded bool
	var calls, listed []call // the content's calls, and those of the calls member
	var self call            // the turn's own, for a kind that is a call
	next, err := eachMember(b, m, d, func(key []byte, v int) (int, error) {
		switch k := string(key); {
		case is(k, t.role):
			lit, next, ok, err := stringOrSkip(b, v, d+1)
			if ok {
				r = t.roles(word(b, lit))
			}
			return next, err
		case is(k, t.kind):
			lit, next, ok, err := stringOrSkip(b, v, d+1)
			kind, kinded = lit, ok
			return next, err
		case t.holdsText(k) != "":
			// The last of duplicate members wins. The segments name the
			// member by the description's string: the key's is the body's.
			field := t.holdsText(k)
			c.segs = dropField(c.segs, first, field)
			calls = calls[:0]
			return c.content(&t.holds, segment{field: field, part: -1, sub: -1}, v, d+1, &calls)
		case is(k, t.calls):
			listed = c.callRoom()
			return c.callList(&t.call, v, d+1, &listed)
		case t.call.at == "" && (is(k, t.call.name) || is(k, t.call.args)):
			return c.callMember(&t.call, k, v, d+1, &self)
		}
		return skipValue(b, v, d+1)
	})
	if len(calls) == 0 {
		calls = c.keepCalls(listed) // most turns have only one list: it need not be copied
	} else {
		calls = append(calls, listed...)
	}
	if t.kind != "" {
		var what []byte
		if kinded {
			what = word(b, kind)
		}
		k, listed := t.kindOf(what)
		switch {
		case !listed:
			r = roleOther
		case k.role != roleOther:
			r = k.role
		}
		if k.call && named(self) {
			calls = append(calls, self)
			c.note(2 * callSize)
		}
		c.segs = keepField(c.segs, first, k.content)
	}
	c.addTurn(top, n, r, first, calls)
	return next, err
}

// holdsText returns the name of member k when it holds a turn's text, for
// some kind of turn, and "" when it does not.
func (t *turnShape) holdsText(k string) string {
	if is(k, t.content) {
		return t.content
	}
	for _, kind := range t.kinds {
		if is(k, kind.content) {
			return kind.content
		}
	}
	return ""
}

// kindOf looks up the kind of turn a kind member's value names.
func (t *turnShape) kindOf(name []byte) (turnKind, bool) {
	for _, k := range t.kinds {
		if k.name == string(name) {
			return k, true
		}
	}
	return turnKind{}, false
}

// dropField removes the segments from first on that the member field gave.
func dropField(segs []segment, first int, field string) []segment {
	return filterField(segs, first, func(f string) bool { return f != field })
}

// keepField keeps, from first on, only the segments the member field gave.
func keepField(segs []segment, first int, field string) []segment {
	return filterField(segs, first, func(f string) bool { return f == field })
}

func filterField(segs []segment, first int, keep func(field string) bool) []segment {
	kept := segs[:first]
	for _, s := range segs[first:] {
		if keep(s.field) {
			kept = append(kept, s)
		}
	}
	return kept
}

// addTurn records turn n of the member top, of role r, whose segments are
// c.segs[first:], as units: each run of its own text a unit of its role,
// each run of tool results a tool unit, in the order they come; an
// assistant's words and calls are one turn of history, and so is a turn
// with no text.
func (c *conversation) addTurn(top string, n int, r role, first int, calls []call) {
	end := len(c.segs)
	if r == roleAssistant || first == end {
		c.units = append(room(c.units), unit{role: r, top: top, index: n, calls: calls, first: first, end: end})
		return
	}
	for i := first; i < end; {
		j := i + 1
		for j < end && c.segs[j].result == c.segs[i].result {
			j++
		}
		u := unit{role: r, top: top, index: n, first: i, end: j}
		if c.segs[i].result {
			u.role = roleTool
		}
		c.units = append(room(c.units), u)
		i = j
	}
}

// content reads the value at v, at depth d, as h says, into segments placed
// as at is; calls, when not nil, takes the tool calls among its parts.
func (c *conversation) content(h *contentShape, at segment, v, d int, calls *[]call) (int, error) {
	b := c.body
	switch {
	case b[v] == '"' && h.text:
		lit, next, err := c.text(v)
		at.lit = lit
		c.segs = append(room(c.segs), at)
		return next, err
	case b[v] != '[' || h.parts == nil:
		return skipValue(b, v, d)
	}
	return c.eachObject(v, d, func(n, p int) (int, error) {
		// A list's parts index the content's parts, or, inside a part, its
		// tool result's.
		in := at
		if in.part < 0 {
			in.part = int32(n)
		} else {
			in.sub = int32(n)
		}
		return c.part(h.parts, in, p, d+1, calls)
	})
}

// part reads the part at v, at depth d, as p says; its segments are placed
// as at is.
func (c *conversation) part(p *partShape, at segment, v, d int, calls *[]call) (int, error) {
	b := c.body
	var typ, text literal
	var typed, hasText, aside, nested bool
	var fn call
	first := len(c.segs)
	head, rest, _ := strings.Cut(p.nested, ".")
	next, err := eachMember(b, v, d, func(key []byte, v int) (int, error) {
		switch k := string(key); {
		case is(k, p.typ):
			lit, next, ok, err := stringOrSkip(b, v, d+1)
			typ, typed = lit, ok
			return next, err
		case is(k, p.text):
			lit, next, ok, err := c.textOrSkip(v, d+1)
			text, hasText = lit, ok
			return next, err
		case is(k, p.aside):
			next, err := skipValue(b, v, d+1)
			aside = string(bytes.TrimSpace(b[v:next])) == "true"
			return next, err
		case is(k, head):
			// Whatever the part's kind, which may be said after it; the
			// last of duplicate members wins.
			c.segs, nested = c.segs[:first], true
			return c.nest(p, at, rest, v, d+1)
		case is(k, p.call.at):
			return c.callObject(&p.call, v, d+1, &fn)
		case p.call.at == "" && (is(k, p.call.name) || is(k, p.call.args)):
			return c.callMember(&p.call, k, v, d+1, &fn)
		}
		return skipValue(b, v, d+1)
	})
	said := hasText && !aside && (p.harness == nil || !p.harness(b[text.start:text.end]))
	kind := partNone
	switch {
	case p.typ != "":
		var what []byte
		if typed {
			what = word(b, typ)
		}
		kind = p.types[string(what)]
	case nested:
		kind = partNested
	case said:
		kind = partText
	case named(fn):
		kind = partCall
	}
	switch {
	case kind == partNested:
		// Its segments were recorded as it was read.
	case kind == partText && said:
		at.lit, at.leaf = text, p.text
		c.segs = append(room(c.segs[:first]), at)
	case kind == partCall && named(fn) && calls != nil:
		c.segs = c.segs[:first]
		*calls = append(*calls, fn)
		c.note(2 * callSize) // with what growing the list leaves behind
	default:
		c.segs = c.segs[:first]
	}
	return next, err
}

// nest reads what a part nests, the value at v at depth d, of which rest is
// what is left of the path to it.
func (c *conversation) nest(p *partShape, at segment, rest string, v, d int) (int, error) {
	b := c.body
	if rest != "" {
		if b[v] != '{' {
			return skipValue(b, v, d)
		}
		head, rest, _ := strings.Cut(rest, ".")
		first := len(c.segs)
		return eachMember(b, v, d, func(key []byte, v int) (int, error) {
			if string(key) != head {
				return skipValue(b, v, d+1)
			}
			c.segs = c.segs[:first] // the last of duplicate members wins
			return c.nest(p, at, rest, v, d+1)
		})
	}
	if p.result {
		at.result = true
	}
	if p.holds != nil {
		return c.content(p.holds, at, v, d, nil)
	}
	// A JSON value's strings are placed by their path below the part's
	// tool result, or, when the value is not one, below the part.
	if c.path == nil {
		c.path = make([]byte, 0, 128)
	}
	path := c.path[:0]
	if !p.result {
		path = append(path, p.nested...)
	}
	return c.values(at, v, d, 0, path)
}

// values records every string of the JSON value at v, at depth d and level
// levels below where it started, to maxValueDepth, as segments placed as at
// is, with the dotted path of each as its leaf.
func (c *conversation) values(at segment, v, d, level int, path []byte) (int, error) {
	b := c.body
	switch {
	case b[v] == '"':
		lit, next, err := c.text(v)
		at.lit, at.leaf = lit, string(path)
		c.segs = append(room(c.segs), at)
		return next, err
	case level >= maxValueDepth:
	case b[v] == '{':
		return eachMember(b, v, d, func(key []byte, v int) (int, error) {
			return c.values(at, v, d+1, level+1, append(dot(path), key...))
		})
	case b[v] == '[':
		return eachElement(b, v, d, func(n, e int) (int, error) {
			if err := c.account(); err != nil {
				return e, err
			}
			return c.values(at, e, d+1, level+1, strconv.AppendInt(dot(path), int64(n), 10))
		})
	}
	return skipValue(b, v, d)
}

// dot ends a path with the dot before its next step, if it has any.
func dot(path []byte) []byte {
	if len(path) == 0 {
		return path
	}
	return append(path, '.')
}

// callRoom returns an empty list with room for a turn's calls in the chunk
// the request's lists of calls share (see chunk).
func (c *conversation) callRoom() []call {
	if cap(c.freeCalls) == 0 {
		c.freeCalls = make([]call, 0, chunk(&c.callsChunk, 32))
	}
	return c.freeCalls
}

// keepCalls returns listed, taken out of the room callRoom gave when it was
// filled there and not in an array of its own.
func (c *conversation) keepCalls(listed []call) []call {
	n := len(listed)
	if n > 0 && cap(c.freeCalls) > 0 && &listed[0] == &c.freeCalls[:1][0] {
		c.freeCalls = c.freeCalls[n:n]
	}
	return listed[:n:n]
}

// callList reads a list of tool calls (chat's tool_calls): each element
// holds a call at s.at.
func (c *conversation) callList(s *callShape, v, d int, calls *[]call) (int, error) {
	b := c.body
	if b[v] != '[' {
		return skipValue(b, v, d)
	}
	return c.eachObject(v, d, func(_, e int) (int, error) {
		var fn call
		next, err := eachMember(b, e, d+1, func(key []byte, v int) (int, error) {
			if is(string(key), s.at) {
				return c.callObject(s, v, d+2, &fn)
			}
			return skipValue(b, v, d+2)
		})
		if named(fn) {
			*calls = append(*calls, fn)
			c.note(2 * callSize) // with what growing the list leaves behind
		}
		return next, err
	})
}

// callObject reads the call object at v, at depth d, into fn.
func (c *conversation) callObject(s *callShape, v, d int, fn *call) (int, error) {
	b := c.body
	if b[v] != '{' {
		return skipValue(b, v, d)
	}
	*fn = call{}
	return eachMember(b, v, d, func(key []byte, v int) (int, error) {
		if k := string(key); is(k, s.name) || is(k, s.args) {
			return c.callMember(s, k, v, d+1, fn)
		}
		return skipValue(b, v, d+1)
	})
}

// callMember reads member k of a call, its name or its arguments, at v.
func (c *conversation) callMember(s *callShape, k string, v, d int, fn *call) (int, error) {
	b := c.body
	if k == s.args && s.raw {
		next, err := skipValue(b, v, d)
		fn.args, fn.raw = literal{start: v, end: next}, true
		return next, err
	}
	lit, next, ok, err := stringOrSkip(b, v, d)
	switch {
	case ok && k == s.name:
		fn.name = lit
	case ok:
		fn.args, fn.raw = lit, false
	}
	return next, err
}

// named says a call names the tool it calls: one that does not is no call
// the history could show.
func named(fn call) bool {
	return fn.name.end > fn.name.start
}
