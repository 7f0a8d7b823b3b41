package detect

import "strings"

// playwrightFormat is Playwright's aria snapshot as @playwright/mcp returns
// it: YAML list items `- role "name" [attr] [ref=e12]: text` indented by two
// spaces, inside a fenced yaml block after `### Snapshot` (older releases:
// `- Page Snapshot:`). Refs of elements inside frames carry a prefix (f2e42);
// `[active]` marks the focus; a key holding ": " is single-quoted. Stubs and
// markers are list items too, so the snapshot stays a YAML list.
var playwrightFormat = spec{
	name:  Playwright,
	parse: parsePlaywright,
	ids:   func(text *screen) bool { return text.has("ref=") },
	stub: func(line, bid, role string) string {
		if role == "" {
			// An unchanged element of an incremental snapshot is its ref.
			return indentOf(line) + "- ref=" + bid + " [unchanged]"
		}
		s := indentOf(line) + "- " + role
		if bid != "" {
			s += " [ref=" + bid + "]"
		}
		return s
	},
	marker:  func(line, note string) string { return indentOf(line) + "- " + note },
	fixture: "playwright.txt",
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
// Attributes may also share one bracket, comma-separated, as agent-browser
// prints them (`[checked=false, ref=e5]`). An incremental snapshot of
// Playwright MCP 0.0.51 to 0.0.68 names an element unchanged since the
// previous snapshot by its ref alone (`- ref=e4 [unchanged]`): it has no
// role.
func playwrightKey(k string) (role, ref string, focused bool, rest string, ok bool) {
	if v, ok := strings.CutPrefix(k, "ref="); ok {
		end := strings.IndexAny(v, " :")
		if end < 0 {
			end = len(v)
		}
		if v[:end] == "" || bidValue(v[:end]) != v[:end] {
			return "", "", false, "", false
		}
		ref, k = v[:end], v[end:]
		for strings.HasPrefix(k, " [") {
			end := strings.IndexByte(k, ']')
			if end < 0 {
				return "", "", false, "", false
			}
			k = k[end+1:]
		}
		return "", ref, false, k, true
	}
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
		for attr := range strings.SplitSeq(k[2:end], ", ") {
			switch {
			case strings.HasPrefix(attr, "ref="):
				if v := attr[len("ref="):]; v != "" && bidValue(v) == v {
					ref = v
				}
			case attr == "active":
				focused = true
			}
		}
		k = k[end+1:]
	}
	return role, ref, focused, k, true
}
