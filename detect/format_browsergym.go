package detect

import "strings"

// browserGymFormat is BrowserGym's flatten_axtree_to_str, as AgentLab's
// GenericAgent, BrowserGym's demo agent and OpenHands print it: tab
// indentation, `[bid] role 'name', prop=value, ...`, bids like 12, a212 or
// aB12, StaticText and the root without a bid, names in Python repr quoting,
// and `focused` among the properties.
var browserGymFormat = spec{
	name:  BrowserGym,
	parse: parseBracket,
	// An id starts its line, after the tabs of its depth.
	ids:     func(text *screen) bool { return text.brackets(&text.lineStart) >= MinIDLines },
	stub:    bracketStub,
	marker:  indentedMarker,
	fixture: "browsergym.txt",
}

// webArenaFormat is WebArena's accessibility tree: `[1744] link 'HP ...'`
// with properties as `focused: True required: False`, every line with an id.
// BrowserGym's grammar reads it and reports WebArena when the properties vote
// for it.
var webArenaFormat = spec{
	name:    WebArena,
	stub:    bracketStub,
	marker:  indentedMarker,
	fixture: "webarena.txt",
}

// pyValue skips a property value as BrowserGym prints it with repr(): a quoted
// string, or a bare token such as True, None or 12.5.
func pyValue(t string) (rest string, ok bool) {
	if t == "" {
		return "", false
	}
	if isQuote(t[0]) {
		for i := 1; i < len(t); i++ {
			switch t[i] {
			case '\\':
				i++
			case t[0]:
				return t[i+1:], true
			}
		}
		return "", false
	}
	end := strings.Index(t, ", ")
	if end < 0 {
		end = len(t)
	}
	if end == 0 || strings.ContainsAny(t[:end], " '\"") {
		return "", false
	}
	return t[end:], true
}

// browserGymTail accepts ` value=...` and `, prop`, `, prop=value` lists.
func browserGymTail(t string) tail {
	r := tail{ok: true}
	if v, ok := strings.CutPrefix(t, " value="); ok {
		if t, ok = pyValue(v); !ok {
			return tail{}
		}
		r.vote = -1
	}
	for t != "" {
		rest, ok := strings.CutPrefix(t, ", ")
		n := name(rest)
		if !ok || n == 0 {
			return tail{}
		}
		prop := rest[:n]
		t = rest[n:]
		if v, ok := strings.CutPrefix(t, "="); ok {
			if t, ok = pyValue(v); !ok {
				return tail{}
			}
		} else if prop == "focused" {
			r.focused = true
		}
		r.vote = -1
	}
	return r
}

// webArenaTail accepts WebArena's ` prop: value prop: value` list, whose values are
// free text.
func webArenaTail(t string) tail {
	rest, ok := strings.CutPrefix(t, " ")
	n := name(rest)
	if !ok || n == 0 || n == len(rest) || rest[n] != ':' {
		return tail{}
	}
	return tail{ok: true, vote: 1, focused: strings.Contains(t, "focused: True")}
}

func bracketTail(t string) tail {
	if r := browserGymTail(t); r.ok {
		return r
	}
	return webArenaTail(t)
}

// parseBracket parses the `[bid] role 'name', props` lines of BrowserGym (bid absent
// on StaticText and the root) and of WebArena (`[id] role 'name' prop: value`).
func parseBracket(s string, p int) (element, bool) {
	e := lineEnd(s, p)
	ce := content(s, p, e)
	el := element{next: e + 1}
	el.Start, el.End = p, e
	el.Depth = tabs(s, p, ce)
	i := p + el.Depth
	if i < ce && s[i] == '[' {
		j := i + 1
		for j < ce && isLetter(s[j]) {
			j++
		}
		j += digits(s[j:ce])
		if j == i+1 || j >= ce || s[j] != ']' || j-i-1 > maxBIDLen {
			return el, false
		}
		el.BID = s[i+1 : j]
		if i = j + 1; strings.TrimRight(s[i:ce], " ") == "" {
			// WebArena prints a bare id for a node it has no role for. It belongs to
			// the tree but is no evidence of one.
			el.vote = 1
			return el, true
		}
		if s[i] != ' ' {
			return el, false
		}
		i++
	}
	n := name(s[i:ce])
	if n == 0 {
		return el, false
	}
	el.Role = s[i : i+n]
	i += n
	var t tail
	if i+1 < ce && s[i] == ' ' && isQuote(s[i+1]) {
		end, tt, ok := quoted(s, i+1, ce, bracketTail)
		if !ok {
			return el, false
		}
		if el.End = end; end != e {
			el.next = end + 1
		}
		t = tt
	} else if el.Role == "generic" {
		// BrowserGym prints every node with its name except unnamed generic ones.
		if t = bracketTail(s[i:ce]); !t.ok {
			return el, false
		}
	} else {
		return el, false
	}
	el.counted, el.id = true, el.BID != ""
	el.focused, el.vote = t.focused, t.vote
	if el.BID == "" {
		el.vote = -1
	}
	return el, true
}
