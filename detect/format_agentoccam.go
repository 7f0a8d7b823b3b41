package detect

import "strings"

// agentOccamFormat is AgentOccam's simplified tree: `role [id] 'name'
// [prop: value]`, tab indentation, id, name and properties each optional.
var agentOccamFormat = spec{
	name:  AgentOccam,
	parse: parseOccam,
	// An id follows the role: `link [3987] 'My Account'`.
	ids: func(text *screen) bool { return text.brackets(&text.spaceDigit) >= MinIDLines },
	stub: func(line, bid, role string) string {
		s := indentOf(line) + role
		if bid != "" {
			s += " [" + bid + "]"
		}
		return s
	},
	marker:  indentedMarker,
	fixture: "agentoccam.txt",
}

// occamTail accepts AgentOccam's ` [prop: value]` lists.
func occamTail(t string) tail {
	r := tail{ok: true}
	for t != "" {
		rest, ok := strings.CutPrefix(t, " [")
		end := strings.IndexByte(rest, ']')
		if !ok || end < 0 || !strings.Contains(rest[:end], ": ") {
			return tail{}
		}
		if strings.HasPrefix(rest, "focused: True") {
			r.focused = true
		}
		t = rest[end+1:]
	}
	return r
}

// parseOccam parses AgentOccam's `role [id] 'name' [prop: value]` lines; id, name and
// properties are each optional.
func parseOccam(s string, p int) (element, bool) {
	e := lineEnd(s, p)
	ce := content(s, p, e)
	el := element{next: e + 1}
	el.Start, el.End = p, e
	el.Depth = tabs(s, p, ce)
	i := p + el.Depth
	n := name(s[i:ce])
	if n == 0 {
		return el, false
	}
	el.Role = s[i : i+n]
	i += n
	if rest, ok := strings.CutPrefix(s[i:ce], " ["); ok {
		if d := digits(rest); d > 0 && d < len(rest) && rest[d] == ']' && d <= maxBIDLen {
			el.BID = rest[:d]
			i += 2 + d + 1
		}
	}
	var t tail
	named := i+1 < ce && s[i] == ' ' && isQuote(s[i+1])
	if named {
		end, tt, ok := quoted(s, i+1, ce, occamTail)
		if !ok {
			return el, false
		}
		if el.End = end; end != e {
			el.next = end + 1
		}
		t = tt
	} else if t = occamTail(s[i:ce]); !t.ok {
		return el, false
	}
	if el.BID == "" && !named && el.Depth == 0 {
		// A lone word at the margin is prose; AgentOccam prints bare roles only
		// inside the tree.
		return el, false
	}
	el.counted, el.id, el.focused = true, el.BID != "", t.focused
	return el, true
}
