package detect

import "bytes"

// The Anthropic Messages API (POST /v1/messages, Claude Code's only API)
// puts text in "system" (a string or text blocks) and in each message's
// "content" (a string or blocks). Pages arrive in tool_result blocks, whose
// content is a string or text blocks, and those sit in user messages: a
// user message made of tool results is tool output, not the user's words.
// thinking and redacted_thinking blocks (signed), tool_use, images,
// documents and unknown blocks are never searched, and cache_control
// markers are never touched: only the strings that hold a page change.

// systemPrompt records the Messages API "system" member, a string or an
// array of text blocks, as the unit it returns.
func (c *conversation) systemPrompt(v int) (unit, int, error) {
	u := unit{role: roleSystem, top: "system", index: -1, first: len(c.segs)}
	next, err := c.content("", v, 1)
	u.end = len(c.segs)
	return u, next, err
}

// blockRun is a run of consecutive content blocks of one kind in a Messages
// API message: the segments of one unit.
type blockRun struct {
	tool       bool // tool_result blocks; otherwise text blocks
	first, end int  // the run's segments are c.segs[first:end]
}

// anthropicMessages records the Messages API "messages" member. Each run of
// text blocks of a message becomes a unit of the message's role, each run of
// tool_result blocks a tool unit, in the order the blocks come; an assistant
// message's tool_use blocks are its calls, with their input as arguments.
func (c *conversation) anthropicMessages(v int) (int, error) {
	b := c.body
	if b[v] != '[' {
		return skipValue(b, v, 1)
	}
	return eachElement(b, v, 1, func(n, m int) (int, error) {
		if err := c.account(); err != nil {
			return m, err
		}
		if b[m] != '{' {
			return skipValue(b, m, 2)
		}
		r := roleOther
		var runs []blockRun
		var calls []call
		first := len(c.segs)
		next, err := eachMember(b, m, 2, func(key []byte, v int) (int, error) {
			switch string(key) {
			case "role":
				lit, next, ok, err := stringOrSkip(b, v, 3)
				if ok {
					r = parseRole(word(b, lit))
				}
				return next, err
			case "content":
				// The last of duplicate members wins.
				c.segs, runs, calls = c.segs[:first], nil, nil
				return c.anthropicContent(v, &runs, &calls)
			}
			return skipValue(b, v, 3)
		})
		c.addTurn("messages", n, r, runs, calls)
		return next, err
	})
}

// addTurn records message n of the array top, of role r, as units: each run
// of text blocks a unit of the message's role, each run of tool results a
// tool unit, in the order the blocks come; an assistant's words and calls
// are one turn of history.
func (c *conversation) addTurn(top string, n int, r role, runs []blockRun, calls []call) {
	if r == roleAssistant || len(runs) == 0 {
		u := unit{role: r, top: top, index: n, calls: calls, first: len(c.segs), end: len(c.segs)}
		if len(runs) > 0 {
			u.first = runs[0].first
		}
		if r != roleAssistant && r != roleUser {
			u.role = roleOther
		}
		c.units = append(room(c.units), u)
		return
	}
	for _, run := range runs {
		u := unit{role: r, top: top, index: n, first: run.first, end: run.end}
		if run.tool {
			u.role = roleTool
		}
		c.units = append(room(c.units), u)
	}
}

// anthropicContent records a Messages API message's content: a string, or
// blocks of which text and tool_result ones hold text.
func (c *conversation) anthropicContent(v int, runs *[]blockRun, calls *[]call) (int, error) {
	b := c.body
	switch b[v] {
	case '"':
		lit, next, err := c.text(v)
		c.segs = append(room(c.segs), segment{lit: lit, field: "content", part: -1})
		*runs = append(*runs, blockRun{first: len(c.segs) - 1, end: len(c.segs)})
		return next, err
	case '[':
	default:
		return skipValue(b, v, 3)
	}
	return eachElement(b, v, 3, func(k, blk int) (int, error) {
		if err := c.account(); err != nil {
			return blk, err
		}
		if b[blk] != '{' {
			return skipValue(b, blk, 4)
		}
		var kind literal
		var text, name literal
		var hasText, hasName bool
		input := literal{start: -1}
		first := len(c.segs)
		next, err := eachMember(b, blk, 4, func(key []byte, v int) (int, error) {
			switch string(key) {
			case "type":
				lit, next, _, err := stringOrSkip(b, v, 5)
				kind = lit
				return next, err
			case "text":
				lit, next, ok, err := c.textOrSkip(v, 5)
				text, hasText = lit, ok
				return next, err
			case "name":
				lit, next, ok, err := stringOrSkip(b, v, 5)
				name, hasName = lit, ok
				return next, err
			case "input":
				next, err := skipValue(b, v, 5)
				input = literal{start: v, end: next}
				return next, err
			case "content":
				// Only a tool_result's content is kept (below); the type may
				// come after it.
				return c.toolResultContent(k, v)
			}
			return skipValue(b, v, 5)
		})
		if err != nil {
			// A body that ends inside the block: what was read of it is
			// not to be trusted, and the caller reports the error.
			c.segs = c.segs[:first]
			return next, err
		}
		switch t := word(b, kind); {
		case bytes.Equal(t, []byte("tool_result")):
			addRun(runs, true, first, len(c.segs))
		case bytes.Equal(t, []byte("text")) && hasText && !harnessText(b[text.start:text.end]):
			c.segs = append(room(c.segs[:first]), segment{lit: text, field: "content", part: k})
			addRun(runs, false, first, len(c.segs))
		case bytes.Equal(t, []byte("tool_use")) && hasName && input.start >= 0:
			c.segs = c.segs[:first]
			*calls = append(*calls, call{name: name, args: input, raw: true})
			c.note(2 * callSize) // with what growing the list leaves behind
		default:
			c.segs = c.segs[:first]
		}
		return next, err
	})
}

// toolResultContent records the content of content block k when it is a
// tool result's: a string, or text blocks.
func (c *conversation) toolResultContent(k, v int) (int, error) {
	b := c.body
	switch b[v] {
	case '"':
		lit, next, err := c.text(v)
		c.segs = append(room(c.segs), segment{lit: lit, field: "content", part: -1, result: k + 1})
		return next, err
	case '[':
	default:
		return skipValue(b, v, 5)
	}
	first := len(c.segs)
	next, err := c.content("content", v, 5)
	for i := first; i < len(c.segs); i++ {
		c.segs[i].result = k + 1
	}
	return next, err
}

// addRun extends the last run when it is of the same kind, else starts one.
func addRun(runs *[]blockRun, tool bool, first, end int) {
	if first == end {
		return
	}
	if n := len(*runs); n > 0 && (*runs)[n-1].tool == tool && (*runs)[n-1].end == first {
		(*runs)[n-1].end = end
		return
	}
	*runs = append(*runs, blockRun{tool: tool, first: first, end: end})
}

// harnessText says whether a text block is Claude Code's own note to the
// model rather than the user's words: a block that is one
// <system-reminder>...</system-reminder> (context, reminders, file state).
// Claude Code puts several before the task in the first message, enough to
// push the task out of a goal's first kilobytes.
func harnessText(raw []byte) bool {
	return wholeElement(raw, "system-reminder")
}

// wholeElement says whether an escaped JSON string's text is one
// <tag>...</tag> element, surrounding blanks aside.
func wholeElement(raw []byte, tag string) bool {
	open, end := []byte("<"+tag+">"), []byte("</"+tag+">")
	raw = bytes.TrimLeft(raw, " \t")
	for bytes.HasPrefix(raw, []byte(`\n`)) {
		raw = bytes.TrimLeft(raw[2:], " \t")
	}
	raw = bytes.TrimRight(raw, " \t")
	for bytes.HasSuffix(raw, []byte(`\n`)) {
		raw = bytes.TrimRight(raw[:len(raw)-2], " \t")
	}
	return bytes.HasPrefix(raw, open) && bytes.HasSuffix(raw, end) && bytes.Count(raw, open) == bytes.Count(raw, end)
}
