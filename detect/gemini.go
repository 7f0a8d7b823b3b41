package detect

import (
	"bytes"
	"strconv"
)

// The Gemini API (POST .../models/{model}:generateContent, Gemini CLI's API)
// puts the conversation in "contents": turns of role "user" or "model",
// each a list of parts. Pages arrive as the values of a functionResponse's
// "response" object (Gemini CLI: response.output, wrapped in
// <untrusted_context>), or in user text parts. functionCall parts are a
// model turn's calls; thought parts, thoughtSignature, inline data,
// systemInstruction, tools and generationConfig are never searched, and
// only the strings that hold a page change.

// countedContents is where a countTokens body may hold its conversation:
// the contents of the generateContentRequest it sizes.
const countedContents = "generateContentRequest.contents"

// maxResponseDepth bounds how deep into a function response's value strings
// are looked for.
const maxResponseDepth = 6

// countedRequest records a countTokens body's "generateContentRequest".
func (c *conversation) countedRequest(v int) (int, error) {
	b := c.body
	if b[v] != '{' {
		return skipValue(b, v, 1)
	}
	return eachMember(b, v, 1, func(key []byte, v int) (int, error) {
		if string(key) == "contents" {
			c.forget(countedContents)
			return c.geminiContents(countedContents, v, 2)
		}
		return skipValue(b, v, 2)
	})
}

// geminiContents records the turns of a "contents" array at depth d, named
// top. A turn's text parts make a unit of its role, its function responses
// a tool unit, in the order the parts come; a model turn's function calls
// are its calls, with their args as arguments.
func (c *conversation) geminiContents(top string, v, d int) (int, error) {
	b := c.body
	if b[v] != '[' {
		return skipValue(b, v, d)
	}
	return eachElement(b, v, d, func(n, m int) (int, error) {
		if err := c.account(); err != nil {
			return m, err
		}
		if b[m] != '{' {
			return skipValue(b, m, d+1)
		}
		// A turn without a role is the user's, as the API reads it.
		r := roleUser
		var runs []blockRun
		var calls []call
		first := len(c.segs)
		next, err := eachMember(b, m, d+1, func(key []byte, v int) (int, error) {
			switch string(key) {
			case "role":
				lit, next, ok, err := stringOrSkip(b, v, d+2)
				if ok {
					r = geminiRole(word(b, lit))
				}
				return next, err
			case "parts":
				// The last of duplicate members wins.
				c.segs, runs, calls = c.segs[:first], nil, nil
				return c.geminiParts(v, d+2, &runs, &calls)
			}
			return skipValue(b, v, d+2)
		})
		c.addTurn(top, n, r, runs, calls)
		return next, err
	})
}

func geminiRole(raw []byte) role {
	if string(raw) == "model" {
		return roleAssistant
	}
	return parseRole(raw)
}

// geminiParts records the parts of a turn, an array at depth d.
func (c *conversation) geminiParts(v, d int, runs *[]blockRun, calls *[]call) (int, error) {
	b := c.body
	if b[v] != '[' {
		return skipValue(b, v, d)
	}
	return eachElement(b, v, d, func(k, p int) (int, error) {
		if err := c.account(); err != nil {
			return p, err
		}
		if b[p] != '{' {
			return skipValue(b, p, d+1)
		}
		var text literal
		var hasText, thought, response bool
		var fn call
		hasCall := false
		first := len(c.segs)
		next, err := eachMember(b, p, d+1, func(key []byte, v int) (int, error) {
			switch string(key) {
			case "text":
				lit, next, ok, err := c.textOrSkip(v, d+2)
				text, hasText = lit, ok
				return next, err
			case "thought":
				next, err := skipValue(b, v, d+2)
				thought = string(bytes.TrimSpace(b[v:next])) == "true"
				return next, err
			case "functionCall":
				next, err := c.functionCall(v, d+2, &fn)
				hasCall = fn.name.end > fn.name.start
				return next, err
			case "functionResponse":
				c.segs = c.segs[:first] // the last of duplicate members wins
				response = true
				return c.functionResponse(k, v, d+2)
			}
			return skipValue(b, v, d+2)
		})
		if err != nil {
			c.segs = c.segs[:first]
			return next, err
		}
		switch {
		case response:
			addRun(runs, true, first, len(c.segs))
		case hasText && !thought && !geminiHarness(b[text.start:text.end]):
			c.segs = append(room(c.segs[:first]), segment{lit: text, field: "parts", part: k})
			addRun(runs, false, first, len(c.segs))
		case hasCall:
			c.segs = c.segs[:first]
			*calls = append(*calls, fn)
			c.note(2 * callSize) // with what growing the list leaves behind
		default:
			c.segs = c.segs[:first]
		}
		return next, err
	})
}

// geminiHarness says whether a text part is Gemini CLI's own note to the
// model rather than the user's words: the <session_context> (date, system,
// folders) that comes before the task in the first turn, or a hook's
// <hook_context>.
func geminiHarness(raw []byte) bool {
	return wholeElement(raw, "session_context") || wholeElement(raw, "hook_context")
}

// functionCall reads a functionCall object into fn: its name, and its args
// as a JSON value.
func (c *conversation) functionCall(v, d int, fn *call) (int, error) {
	b := c.body
	if b[v] != '{' {
		return skipValue(b, v, d)
	}
	*fn = call{raw: true, args: literal{start: v, end: v}}
	return eachMember(b, v, d, func(key []byte, v int) (int, error) {
		switch string(key) {
		case "name":
			lit, next, ok, err := stringOrSkip(b, v, d+1)
			if ok {
				fn.name = lit
			}
			return next, err
		case "args":
			next, err := skipValue(b, v, d+1)
			fn.args = literal{start: v, end: next}
			return next, err
		}
		return skipValue(b, v, d+1)
	})
}

// functionResponse records the strings of part k's functionResponse
// "response" value as segments.
func (c *conversation) functionResponse(k, v, d int) (int, error) {
	b := c.body
	if b[v] != '{' {
		return skipValue(b, v, d)
	}
	return eachMember(b, v, d, func(key []byte, v int) (int, error) {
		if string(key) != "response" {
			return skipValue(b, v, d+1)
		}
		return c.responseStrings(k, v, d+1, 0, "functionResponse.response")
	})
}

// responseStrings records every string of a function response's value at
// v, level levels down from the response, to maxResponseDepth, with its
// path under the part.
func (c *conversation) responseStrings(k, v, d, level int, path string) (int, error) {
	b := c.body
	switch {
	case b[v] == '"':
		lit, next, err := c.text(v)
		c.segs = append(room(c.segs), segment{lit: lit, field: "parts", part: k, leaf: path})
		return next, err
	case level >= maxResponseDepth:
	case b[v] == '{':
		return eachMember(b, v, d, func(key []byte, v int) (int, error) {
			return c.responseStrings(k, v, d+1, level+1, path+"."+string(key))
		})
	case b[v] == '[':
		return eachElement(b, v, d, func(n, e int) (int, error) {
			if err := c.account(); err != nil {
				return e, err
			}
			return c.responseStrings(k, e, d+1, level+1, path+"."+strconv.Itoa(n))
		})
	}
	return skipValue(b, v, d)
}
