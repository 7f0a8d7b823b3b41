package detect

import "strings"

// chromeDevToolsFormat is the snapshot chrome-devtools-mcp's take_snapshot
// (and every tool with includeSnapshot) returns after `## Latest page
// snapshot`: `uid=1_0 RootWebArea "Title" url="..."`, two spaces per level,
// attributes as `key="value"` or a bare `key` for a true boolean (`focused`
// marks the focus), text nodes without a role (`uid=1_26 "Total: $"`), and
// names and values printed without escaping, so a name may hold quotes or run
// over several lines (`LineBreak "` and `"` on the next line).
var chromeDevToolsFormat = spec{
	name:   ChromeDevTools,
	parse:  parseChromeDevTools,
	ids:    func(text *screen) bool { return text.has("uid=") },
	accept: nested,
	idCue:  "uid=",
	stub: func(line, bid, role string) string {
		s := indentOf(line) + "uid=" + bid
		if role != "" {
			s += " " + role
		}
		return s
	},
	marker:  indentedMarker,
	fixture: "chrome-devtools.txt",
}

// chromeSelected is what chrome-devtools-mcp appends to the element selected in
// the DevTools Elements panel.
const chromeSelected = " [selected in the DevTools Elements panel]"

// parseChromeDevTools parses one element of a chrome-devtools-mcp snapshot.
func parseChromeDevTools(s string, p int) (element, bool) {
	e := lineEnd(s, p)
	ce := content(s, p, e)
	el := element{next: e + 1}
	el.Start, el.End = p, e
	depth, width, ok := spaceIndent(s, p, ce)
	if !ok {
		return el, false
	}
	el.Depth = depth
	i := p + width
	if !strings.HasPrefix(s[i:ce], "uid=") {
		return el, false
	}
	i += len("uid=")
	j := i
	for j < ce && (isNameChar(s[j])) {
		j++
	}
	if j == i || j-i > maxBIDLen || !isDigit(s[i]) {
		return el, false
	}
	el.BID = s[i:j]
	el.id, el.counted = true, true
	if i = j; i == ce {
		return el, true
	}
	if s[i] != ' ' || i+1 == ce {
		return el, false
	}
	i++
	if s[i] != '"' {
		n := name(s[i:ce])
		if n == 0 {
			return el, false
		}
		el.Role = s[i : i+n]
		i += n
		if i+1 >= ce || s[i] != ' ' || s[i+1] != '"' {
			t := chromeTail(s[i:ce])
			el.focused = t.focused
			return el, t.ok
		}
		i++
	}
	end, t, ok := chromeName(s, i, ce)
	if !ok {
		return el, false
	}
	if el.End = end; end != e {
		el.next = end + 1
	}
	el.focused = t.focused
	return el, true
}

// chromeName reads a name whose opening quote is s[q], on a line whose content
// ends at ce: it ends at the first quote followed by a valid tail, on this line
// or, since names are printed as they are, on one of the next few lines. It
// returns the end of the element's last line.
func chromeName(s string, q, ce int) (end int, t tail, ok bool) {
	if t, closed, _ := closeName(s, q+1, ce, '"', chromeTail); closed {
		return lineEnd(s, ce), t, true
	}
	e := lineEnd(s, ce)
	for n := 0; n < maxContinuation && e < len(s); n++ {
		p := e + 1
		e = lineEnd(s, p)
		c := content(s, p, e)
		if isBlank(s[p:c]) || strings.HasPrefix(strings.TrimLeft(s[p:c], " "), "uid=") {
			return 0, tail{}, false
		}
		if t, closed, _ := closeName(s, p, c, '"', chromeTail); closed {
			return e, t, true
		}
	}
	return 0, tail{}, false
}

// chromeTail accepts ` key` and ` key="value"` attributes, and the selection
// note.
func chromeTail(t string) tail {
	r := tail{ok: true}
	for t != "" {
		if t == chromeSelected {
			return r
		}
		rest, ok := strings.CutPrefix(t, " ")
		n := name(rest)
		if !ok || n == 0 {
			return tail{}
		}
		key := rest[:n]
		t = rest[n:]
		if v, ok := strings.CutPrefix(t, `="`); ok {
			// Values are not escaped either: one ends at a quote that ends the
			// line or is followed by a space.
			end := -1
			for k := 0; k < len(v); k++ {
				if v[k] == '"' && (k+1 == len(v) || v[k+1] == ' ') {
					end = k
					break
				}
			}
			if end < 0 {
				return tail{}
			}
			t = v[end+1:]
		} else if key == "focused" {
			r.focused = true
		}
	}
	return r
}
