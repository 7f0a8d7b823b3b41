package detect

import "strings"

// browserUseFormat is browser-use's DOM listing: tab-indented element lines
// `[12]<button aria-label=Close />`, `*[12]` for an element new since the last
// step, scroll containers `|SCROLL+12]`, and page text between elements.
var browserUseFormat = spec{
	name:  BrowserUse,
	parse: browserUseElement,
	// Every id closes right before its tag: `[12]<button`, `|SHADOW(open)+3]<div`.
	ids: func(text *screen) bool { return text.has("]<") },
	run: browserUseRun,
	stub: func(line, bid, role string) string {
		s := indentOf(line)
		if bid != "" {
			s += "[" + bid + "]"
		}
		return s + "<" + role + " />"
	},
	marker:  indentedMarker,
	fixture: "browser-use.txt",
}

// browserUseElement parses an element line of browser-use's DOM listing:
// `[12]<button aria-label=Close />`, `*[12]<a >Home />` for an element that is new
// since the previous step, `|SCROLL+12]<div />` and `|SCROLL|<div />`. Older versions
// put the element's text inside the line, so a text with newlines continues it up
// to the line that closes the tag.
func browserUseElement(s string, p int) (element, bool) {
	e := lineEnd(s, p)
	ce := content(s, p, e)
	el, ok := browserUseHead(s[p:ce])
	if !ok {
		return el, false
	}
	el.Start, el.End, el.next = p, e, e+1
	if strings.HasSuffix(s[p:ce], ">") {
		return el, true
	}
	for n, end := 0, e; n < maxContinuation && end < len(s); n++ {
		q := end + 1
		end = lineEnd(s, q)
		line := s[q:content(s, q, end)]
		if _, ok := browserUseHead(line); ok || isBlank(line) || browserUseStop(line) {
			break
		}
		if strings.HasSuffix(line, ">") {
			el.End, el.next = end, end+1
			break
		}
	}
	return el, true
}

// browserUseHead parses the start of an element line: its depth, id and tag.
func browserUseHead(line string) (element, bool) {
	var el element
	el.Depth = tabs(line, 0, len(line))
	i := el.Depth
	if i < len(line) && line[i] == '*' {
		i++
	}
	switch {
	case i < len(line) && line[i] == '[':
		d := digits(line[i+1:])
		if d == 0 || d > maxBIDLen || i+1+d >= len(line) || line[i+1+d] != ']' {
			return el, false
		}
		el.BID = line[i+1 : i+1+d]
		i += d + 2
	case i < len(line) && line[i] == '|':
		j := i + 1
		for j < len(line) && (isLetter(line[j]) || line[j] == '(' || line[j] == ')') {
			j++
		}
		if j < len(line) && line[j] == '+' {
			d := digits(line[j+1:])
			if d == 0 || d > maxBIDLen || j+1+d >= len(line) || line[j+1+d] != ']' {
				return el, false
			}
			el.BID = line[j+1 : j+1+d]
			i = j + d + 2
		} else if j < len(line) && line[j] == '|' && j > i+1 {
			i = j + 1
		} else {
			return el, false
		}
	default:
		return el, false
	}
	if i >= len(line) || line[i] != '<' {
		return el, false
	}
	n := name(line[i+1:])
	if n == 0 {
		return el, false
	}
	el.Role = line[i+1 : i+1+n]
	if after := line[i+1+n:]; after != "" && !strings.ContainsRune(" >/", rune(after[0])) {
		return el, false
	}
	el.id, el.counted = el.BID != "", true
	return el, true
}

// browserUseStop reports the lines browser-use writes around its element list.
func browserUseStop(line string) bool {
	line = strings.TrimSpace(line)
	switch {
	case strings.HasPrefix(line, "[Start of page]"), strings.HasPrefix(line, "[End of page]"):
		return true
	case strings.HasPrefix(line, "... ") && strings.Contains(line, "pixels"):
		return true
	case len(line) > 2 && line[0] == '<' && line[len(line)-1] == '>':
		// Section tags such as </browser_state>.
		tag := strings.TrimPrefix(line[1:len(line)-1], "/")
		return isTagName(tag)
	}
	return false
}

// browserUseRun collects browser-use elements and the page text printed between them.
// The run starts and ends with an element: text after the last one is outside the
// tree, as is everything after a blank line or the list's end marker.
func browserUseRun(s string, p int, parse parseFunc, buf []element) ([]element, int) {
	last, next, text := -1, p, 0
	for p < len(s) {
		if el, ok := parse(s, p); ok {
			buf = append(buf, el)
			last, next, text = len(buf)-1, el.next, 0
			p = el.next
			continue
		}
		e := lineEnd(s, p)
		line := s[p:content(s, p, e)]
		if last < 0 || isBlank(line) || browserUseStop(line) || text == maxTextRun {
			break
		}
		text++
		el := element{next: e + 1}
		el.Start, el.End = p, e
		el.Depth = tabs(s, p, e)
		buf = append(buf, el)
		p = e + 1
	}
	return buf[:last+1], next
}
