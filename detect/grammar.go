package detect

import "strings"

// This file holds one parser per tree grammar. Each parses the element that starts
// at the line beginning at s[p] and reports it in offsets of s. Parsers never look
// behind p and look ahead only to follow a name that runs over several lines, so a
// line parses the same whatever precedes it.

const (
	// maxContinuation bounds how many further lines an element may take when its
	// name holds unescaped newlines.
	maxContinuation = 8
	// maxBIDLen bounds element ids; BrowserGym's are a frame prefix and a counter.
	maxBIDLen = 16
	// maxTextRun bounds the page text browser-use may print between two elements
	// before the list is taken to have ended.
	maxTextRun = 32
	// maxClosingQuotes bounds how many quotes of a line are tried as the end of a
	// name, so that a long line full of quotes costs linear time.
	maxClosingQuotes = 32
)

// element is one parsed tree line. Start and End are offsets in the scanned string and
// Depth is the absolute indentation; a block makes them relative.
type element struct {
	Line
	next    int  // start of the line after the element; past len(s) at the end
	id      bool // carries an element id and counts towards MinIDLines
	counted bool // counts towards MinLines
	focused bool // the tree marks this element as focused
	vote    int8 // > 0: evidence of WebArena's grammar, < 0: of BrowserGym's
}

type parseFunc func(s string, p int) (element, bool)

// lineEnd returns the offset of the '\n' ending the line that starts at p, or len(s).
func lineEnd(s string, p int) int {
	if i := strings.IndexByte(s[p:], '\n'); i >= 0 {
		return p + i
	}
	return len(s)
}

// content returns the end of a line's content: e without a trailing '\r'.
func content(s string, p, e int) int {
	if e > p && s[e-1] == '\r' {
		return e - 1
	}
	return e
}

func isBlank(s string) bool {
	return strings.TrimLeft(s, " \t\r") == ""
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isQuote(c byte) bool  { return c == '\'' || c == '"' }

// isNameChar accepts the characters of roles, tags and property names.
func isNameChar(c byte) bool { return isLetter(c) || isDigit(c) || c == '-' || c == '_' }

// name returns the length of the role-like name at the start of s: a letter, then
// letters, digits, '-' or '_'.
func name(s string) int {
	if s == "" || !isLetter(s[0]) {
		return 0
	}
	i := 1
	for i < len(s) && isNameChar(s[i]) {
		i++
	}
	return i
}

func digits(s string) int {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

func tabs(s string, p, e int) int {
	i := p
	for i < e && s[i] == '\t' {
		i++
	}
	return i - p
}

// tail is what a grammar finds after an element's name.
type tail struct {
	ok, focused bool
	vote        int8
}

type tailFunc func(string) tail

// quoted parses a Python-style quoted name whose opening quote is s[q], on the line
// whose content ends at ce. The name ends at the first closing quote followed by a
// tail the grammar accepts, which also handles names printed without escaping their
// inner quotes. A name with no closing quote on its line continues over the next
// lines; one cut off by a blank line or the end of the text (a truncated tree) ends
// with its line. It returns the end of the element's last line.
func quoted(s string, q, ce int, accept tailFunc) (end int, t tail, ok bool) {
	quote := s[q]
	t, closed, sawQuote := closeName(s, q+1, ce, quote, accept)
	e := lineEnd(s, ce)
	if closed {
		return e, t, true
	}
	if sawQuote {
		return 0, tail{}, false
	}
	first := e
	for n := 0; n < maxContinuation && e < len(s); n++ {
		p := e + 1
		e = lineEnd(s, p)
		c := content(s, p, e)
		if isBlank(s[p:c]) {
			break
		}
		if s[p] == '\t' {
			// An indented line is the next element, not the rest of a name.
			return 0, tail{}, false
		}
		if t, closed, _ := closeName(s, p, c, quote, accept); closed {
			return e, t, true
		}
	}
	if first == len(s) || isBlank(s[first+1:content(s, first+1, lineEnd(s, first+1))]) {
		return first, tail{ok: true}, true
	}
	return 0, tail{}, false
}

func closeName(s string, i, ce int, quote byte, accept tailFunc) (t tail, closed, sawQuote bool) {
	for tries := 0; i < ce && tries < maxClosingQuotes; i++ {
		switch s[i] {
		case '\\':
			i++
		case quote:
			sawQuote = true
			if t = accept(s[i+1 : ce]); t.ok {
				return t, true, true
			}
			tries++
		}
	}
	return tail{}, false, sawQuote
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

// parsePlaywright parses the YAML lines of a Playwright aria snapshot:
// `- role "name" [attr] [ref=e12]: text`, `- text: ...` and `- /url: ...`.
func parsePlaywright(s string, p int) (element, bool) {
	e := lineEnd(s, p)
	ce := content(s, p, e)
	el := element{next: e + 1}
	el.Start, el.End = p, e
	i := p
	for i < ce && s[i] == ' ' {
		i++
	}
	if (i-p)%2 != 0 || !strings.HasPrefix(s[i:ce], "- ") {
		return el, false
	}
	el.Depth = (i - p) / 2
	item := s[i+2 : ce]
	key, rest := item, ""
	if strings.HasPrefix(item, "'") {
		// YAML single-quotes a key that holds ": "; a quote inside is doubled.
		j := 1
		for j < len(item) && !(item[j] == '\'' && (j+1 == len(item) || item[j+1] != '\'')) {
			if item[j] == '\'' {
				j++
			}
			j++
		}
		if j >= len(item) {
			return el, false
		}
		key, rest = item[1:j], item[j+1:]
	}
	role, ref, focused, after, ok := playwrightKey(key)
	if !ok {
		return el, false
	}
	if rest != "" {
		if after != "" {
			return el, false
		}
		after = rest
	}
	if after != "" && after != ":" && !strings.HasPrefix(after, ": ") {
		return el, false
	}
	if !strings.HasPrefix(role, "/") {
		// A "/url:" line is a property of its parent, not an element.
		el.Role = role
	}
	el.BID, el.id, el.counted, el.focused = ref, ref != "", true, focused
	return el, true
}

// playwrightKey parses `role "name" [attr]...` and returns what follows it.
func playwrightKey(k string) (role, ref string, focused bool, rest string, ok bool) {
	start := 0
	if strings.HasPrefix(k, "/") {
		start = 1
	}
	n := name(k[start:])
	if n == 0 {
		return "", "", false, "", false
	}
	role, k = k[:start+n], k[start+n:]
	if strings.HasPrefix(k, ` "`) {
		i := 2
		for i < len(k) && k[i] != '"' {
			if k[i] == '\\' {
				i++
			}
			i++
		}
		if i >= len(k) {
			return "", "", false, "", false
		}
		k = k[i+1:]
	}
	for strings.HasPrefix(k, " [") {
		end := strings.IndexByte(k, ']')
		if end < 0 {
			return "", "", false, "", false
		}
		switch attr := k[2:end]; {
		case strings.HasPrefix(attr, "ref="):
			if v := attr[len("ref="):]; v != "" && bidValue(v) == v {
				ref = v
			}
		case attr == "active":
			focused = true
		}
		k = k[end+1:]
	}
	return role, ref, focused, k, true
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
		return tag != "" && strings.Trim(tag, "abcdefghijklmnopqrstuvwxyz_") == ""
	}
	return false
}
