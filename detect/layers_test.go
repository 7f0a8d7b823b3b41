package detect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
)

// escapeJSON escapes s for the inside of a JSON string as the gateway
// writes a pruned tree back (and as JSON.stringify does): <, > and & stay.
func escapeJSON(t testing.TB, s string) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\"\n")[1:]
}

// wrapper is one way a client wraps a tool output, applied to text.
type wrapper struct {
	name string
	wrap func(t testing.TB, text string) string
	cut  bool // cuts text out of the page: it is found in pieces, or in part
}

// numbered writes text as a file read: each line after its number, the
// first numbered first.
func numbered(text, format string, first int) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = fmt.Sprintf(format, first+i) + l
	}
	return strings.Join(lines, "\n")
}

// middleCut cuts out the middle of text, as a harness does with a long
// output, and puts marker where it cut, on a line of its own unless inline.
func middleCut(text, marker string, inline bool) string {
	n := len(text)
	from, to := n*2/5, n*3/5
	if inline {
		return text[:from] + marker + text[to:]
	}
	return text[:from] + "\n" + marker + "\n" + text[to:]
}

// wrappers are the shapes of issue 27, as their clients write them.
var wrappers = []wrapper{
	{name: "Claude Code Read", wrap: func(_ testing.TB, s string) string { return numbered(s, "%d\t", 1) }},
	{name: "cat -n from line 40", wrap: func(_ testing.TB, s string) string { return numbered(s, "%6d\t", 40) }},
	{name: "arrow", wrap: func(_ testing.TB, s string) string { return numbered(s, "%6d→", 1) }},
	{name: "opencode read", wrap: func(_ testing.TB, s string) string {
		n := strings.Count(s, "\n") + 1
		return "<path>/tmp/tool-output/mcp_1.txt</path>\n<type>file</type>\n<content>\n" + numbered(s, "%d: ", 1) +
			fmt.Sprintf("\n\n(End of file - total %d lines)\n</content>", n)
	}},
	{name: "envelope on the first line, old opencode gutter", wrap: func(_ testing.TB, s string) string {
		return "<path>/tmp/x</path><type>file</type><content>" + numbered(s, "%05d| ", 1) + "\n</content>"
	}},
	{name: "JSON.stringify of the MCP content", wrap: func(t testing.TB, s string) string {
		return `[{"type":"text","text":"` + escapeJSON(t, s) + `"}]`
	}},
	{name: "saved JSON file, indented", wrap: func(t testing.TB, s string) string {
		return "[\n  {\n    \"type\": \"text\",\n    \"text\": \"" + escapeJSON(t, s) + "\"\n  }\n]"
	}},
	{name: "JSON cut before its end", cut: true, wrap: func(t testing.TB, s string) string {
		e := escapeJSON(t, s)
		return `{"content":[{"type":"text","text":"` + e[:len(e)-len(e)/20]
	}},
	{name: "Claude Code's system-reminder after the output", wrap: func(_ testing.TB, s string) string {
		return s + "\n\n<system-reminder>\n<total_tokens>981234 tokens left</total_tokens>\n</system-reminder>"
	}},
	{name: "a header and a footer", wrap: func(_ testing.TB, s string) string {
		return "Showing lines 1-4000 of 9000 total lines.\n\n---\n\n" + s + "\n\n---\nUse offset=4001 to continue."
	}},
	{name: "the page twice", wrap: func(_ testing.TB, s string) string { return s + "\n\n" + s }},
	{name: "Codex cut", cut: true, wrap: func(_ testing.TB, s string) string {
		return middleCut(s, "…4210 tokens truncated…", true)
	}},
	{name: "Gemini CLI cut", cut: true, wrap: func(_ testing.TB, s string) string {
		return middleCut(s, "... [18230 characters omitted] ...", false)
	}},
	{name: "opencode cut", cut: true, wrap: func(_ testing.TB, s string) string {
		return middleCut(s, "...51234 bytes truncated...", false)
	}},
	{name: "Cline cut", cut: true, wrap: func(_ testing.TB, s string) string {
		return middleCut(s, "\n...[truncated 24310 chars]...\n", false) // a blank line on each side
	}},
	{name: "Qwen Code cut", cut: true, wrap: func(_ testing.TB, s string) string {
		return middleCut(s, "\n---\n... [CONTENT TRUNCATED] ...\n---\n", false)
	}},
}

// layerPages are the real pages the wrappers go around: the shared
// accessibility trees and every format's fixture.
func layerPages(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(sharedAXTrees, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range registry {
		files = append(files, filepath.Join("testdata/formats", f.fixture))
	}
	pages := make([]string, len(files))
	for i, f := range files {
		pages[i] = strings.TrimRight(readFile(t, f), "\n")
	}
	return pages
}

// checkWrapped verifies what detection finds in w, page wrapped by stack:
// every tree found goes back byte for byte when it is written back through
// its layers (see checkWriteBack), no tree holds a cut marker, and, when
// nothing cut the page, each of the page's trees is found whole.
func checkWrapped(t *testing.T, page, w string, stack []wrapper) []hit {
	t.Helper()
	hits, _ := findTrees(w, nil)
	prev := 0
	for _, h := range hits {
		at := h.at()
		if at.start < prev || at.end < at.start || at.end > len(w) {
			t.Fatalf("tree at %d..%d after %d in %d bytes", at.start, at.end, prev, len(w))
		}
		prev = at.end
		tree := h.text[h.block.Start:h.block.End]
		checkLines(t, h.block, tree)
		lines := make([]focusgate.Line, len(h.block.Lines))
		for k, l := range h.block.Lines {
			l.Start, l.End = l.Start+h.block.Start, l.End+h.block.Start
			lines[k] = l
		}
		checkWriteBack(t, []byte(w), h.places, h.nested, h.text, lines)
		if h.nested == 0 && h.peeled == 0 && (h.block.Start != at.start || h.block.End != at.end || h.text != w) {
			t.Fatalf("a tree at the surface is at %d..%d, its block %d..%d", at.start, at.end, h.block.Start, h.block.End)
		}
		if m := cutMarker.FindStringIndex(w[at.start:at.end]); m != nil {
			t.Fatalf("a tree holds the cut marker %q", w[at.start+m[0]:at.start+m[1]])
		}
	}
	if slices.ContainsFunc(stack, func(w wrapper) bool { return w.cut }) {
		return hits
	}
	for _, b := range Blocks(page) {
		if !slices.ContainsFunc(hits, func(h hit) bool { return sameElements(h.block, b) }) {
			t.Fatalf("the page's %s tree of %d lines is not found in %d trees", b.Format, len(b.Lines), len(hits))
		}
	}
	return hits
}

// sameElements says whether two blocks hold the same elements.
func sameElements(a, b Block) bool {
	return slices.EqualFunc(a.Lines, b.Lines, func(x, y focusgate.Line) bool {
		return x.BID == y.BID && x.Role == y.Role && x.Depth == y.Depth
	})
}

// The shapes of issue 27, one wrapper at a time and in the combinations
// real clients make, around every fixture page.
func TestLayers(t *testing.T) {
	by := map[string]wrapper{}
	for _, w := range wrappers {
		by[w.name] = w
	}
	stacks := [][]string{
		{"Claude Code Read"}, {"cat -n from line 40"}, {"arrow"}, {"opencode read"},
		{"envelope on the first line, old opencode gutter"},
		{"JSON.stringify of the MCP content"}, {"JSON cut before its end"},
		{"Claude Code's system-reminder after the output"}, {"a header and a footer"},
		{"Codex cut"}, {"Gemini CLI cut"}, {"opencode cut"}, {"Qwen Code cut"},
		// Claude Code and the Agent SDK read back a saved multi-part result.
		{"saved JSON file, indented", "Claude Code Read", "Claude Code's system-reminder after the output"},
		// Cline: the MCP result as escaped JSON, middle-cut.
		{"JSON.stringify of the MCP content", "Cline cut"},
		// opencode saves a cut output and reads it back.
		{"opencode cut", "opencode read"},
		// A page stringified twice, then read back from a file.
		{"JSON.stringify of the MCP content", "JSON.stringify of the MCP content", "cat -n from line 40"},
		{"Gemini CLI cut", "JSON cut before its end", "a header and a footer"},
		// A file read of a file read, saved as JSON.
		{"envelope on the first line, old opencode gutter", "Claude Code Read", "saved JSON file, indented"},
		// Issue 30: a saved result that holds the page twice, read back.
		{"the page twice", "saved JSON file, indented", "Claude Code Read"},
		{"the page twice", "JSON.stringify of the MCP content", "the page twice", "Claude Code Read"},
	}
	pages := layerPages(t)
	for _, names := range stacks {
		t.Run(strings.Join(names, "+"), func(t *testing.T) {
			stack := make([]wrapper, len(names))
			for i, n := range names {
				stack[i] = by[n]
			}
			for _, page := range pages {
				w := page
				for _, l := range stack {
					w = l.wrap(t, w)
				}
				if hits := checkWrapped(t, page, w, stack); len(hits) == 0 {
					t.Fatalf("no tree found in %.200q", w)
				}
			}
		})
	}
}

// Random stacks of wrappers around the fixture pages: every tree found goes
// back exactly, and a page that was not cut is found whole.
func FuzzLayers(f *testing.F) {
	f.Add(uint8(0), []byte{0})
	f.Add(uint8(3), []byte{6, 0, 8})
	f.Add(uint8(7), []byte{5, 13})
	f.Add(uint8(12), []byte{12, 3})
	f.Add(uint8(15), []byte{5, 5, 1})
	f.Add(uint8(16), []byte{10, 6, 0}) // the page twice on one escaped line of a numbered read
	pages := layerPages(f)
	f.Fuzz(func(t *testing.T, pick uint8, ops []byte) {
		if len(ops) > 4 {
			ops = ops[:4]
		}
		page := pages[int(pick)%len(pages)]
		w := page
		var stack []wrapper
		for _, op := range ops {
			l := wrappers[int(op)%len(wrappers)]
			stack = append(stack, l)
			w = l.wrap(t, w)
		}
		checkWrapped(t, page, w, stack)
	})
}

// Claude Code reads back a saved result whose JSON holds the page more
// than once on one escaped line (issue 30, defect 6), in one part or in
// several: each copy is a tree of its own, in the coordinates of the
// message, and the goal is found around them without a panic.
func TestRepeatedPageOnOneEscapedLine(t *testing.T) {
	page := "### Page\n```yaml\n" + playwrightTree + "\n```\n"
	for _, parts := range [][]map[string]string{
		{{"type": "text", "text": page + page}},
		{{"type": "text", "text": page}, {"type": "text", "text": page}},
	} {
		file, _ := json.Marshal(parts)
		lines := "[\n" + string(file)[1:len(file)-1] + "\n]"
		for _, read := range []string{
			numbered(string(file), "%d\t", 1),
			numbered(lines, "%d\t", 1),
			numbered(lines, "%6d\t", 1) + "\n\n<system-reminder>\nx\n</system-reminder>",
		} {
			body := mustJSON(t, map[string]any{"messages": []any{
				map[string]any{"role": "user", "content": "Save the form."},
				map[string]any{"role": "tool", "tool_call_id": "c1", "content": read},
			}})
			obs, err := Find(body, focusgate.APIChat, Options{All: true})
			if err != nil || len(obs) != 2 {
				t.Fatalf("Find = %d observations, %v; want the two copies", len(obs), err)
			}
			for _, o := range obs {
				if o.Text != playwrightTree || o.Nested != 1 || o.Goal != "Save the form." {
					t.Errorf("observation nested %d, goal %q: %.80q", o.Nested, o.Goal, o.Text)
				}
				checkRaw(t, body, o)
			}
			if obs[0].RawEnd > obs[1].RawStart {
				t.Errorf("the copies overlap: %d..%d and %d..%d", obs[0].RawStart, obs[0].RawEnd, obs[1].RawStart, obs[1].RawEnd)
			}
		}
	}
}

// Lines that look like a cut marker but are not one of a client's are text.
func TestCutMarkers(t *testing.T) {
	for s, want := range map[string]bool{
		"…4210 tokens truncated…":             true,
		"... [18230 characters omitted] ...":  true,
		"... [12,345 characters omitted] ...": true,
		"... [12 345 characters omitted] ...": true,
		"...51234 bytes truncated...":         true,
		"...12 lines truncated...":            true,
		"...[truncated 24310 chars]...":       true,
		"...output truncated...":              true,
		"the output was truncated":            false,
		"[truncated]":                         false,
		"3 characters omitted":                false,
	} {
		line := "x\n" + s + "\ny"
		m := findCutMarkers(line)
		if got := len(m) == 1 && line[m[0][0]:m[0][1]] == s; got != want || !want && len(m) > 0 {
			t.Errorf("%q: found as a marker %v, want %v", s, got, want)
		}
	}
}

// What real clients sent through the gateway when the model looked at a
// page too large to show inline (testdata/captures, see its README): the
// Claude Agent SDK's numbered chunk of Playwright's snapshot file and its
// saved JSON read back, each followed by Claude Code's <system-reminder>
// blocks; opencode's read of its saved output and its own cut of an MCP
// output; Cline's MCP result as escaped JSON, middle-cut. Every tree is
// found, the target's line in the last, and the client's text around them
// stays outside.
func TestRealWrapperCaptures(t *testing.T) {
	for _, tt := range []struct {
		file        string
		trees       int
		nested      int
		numbered    bool
		first, last string // how the first tree starts and the last ends, decoded
		outside     string // client text after the last tree
	}{
		{"claude-agent-sdk-0.3.328/read-last-chunk.txt", 1, 0, true, "      - link \"Cedar Tent, model 999, size S\"", "\n    - button \"Place order\" [ref=e3007]", "<system-reminder>"},
		{"claude-agent-sdk-0.3.328/read-saved-json.txt", 1, 1, false, "- generic [active] [ref=e1]:", "    - button \"Place order\" [ref=e3007]", "<system-reminder>"},
		{"opencode-1.18.33/read-last-chunk.txt", 1, 0, true, "    - listitem [ref=e2974]:", "\n    - button \"Place order\" [ref=e3007]", "(End of file - total 4015 lines)\n</content>"},
		{"opencode-1.18.33/mcp-output-cut.txt", 1, 0, false, "- generic [active] [ref=e1]:", "        - /url: /p/12", "...126126 bytes truncated..."},
		{"cline-3.0.65/mcp-result-cut.txt", 2, 1, false, "- generic [active] [ref=e1]:", "    - button \"Place order\" [ref=e3007]", `"}]}`},
	} {
		s := readFile(t, "testdata/captures/"+tt.file)
		hits := checkWrapped(t, "", s, nil)
		if len(hits) != tt.trees {
			t.Fatalf("%s: %d trees, want %d", tt.file, len(hits), tt.trees)
		}
		first, last := hits[0], hits[len(hits)-1]
		head, tail := first.text[first.block.Start:first.block.End], last.text[last.block.Start:last.block.End]
		if !strings.HasPrefix(head, tt.first) || !strings.HasSuffix(tail, tt.last) {
			t.Errorf("%s: trees from %.60q to ...%q", tt.file, head, tail[max(0, len(tail)-60):])
		}
		for _, h := range hits {
			if h.nested != tt.nested {
				t.Errorf("%s: a tree nested %d, want %d", tt.file, h.nested, tt.nested)
			}
			for k, p := range h.places {
				if (p.own > p.start) != tt.numbered {
					l := h.block.Lines[k]
					t.Fatalf("%s: line %q keeps %q before it", tt.file, h.text[h.block.Start+l.Start:h.block.Start+l.End], s[p.start:p.own])
				}
			}
		}
		if !strings.Contains(s[last.at().end:], tt.outside) {
			t.Errorf("%s: %q is not after the last tree", tt.file, tt.outside)
		}
		body := mustJSON(t, map[string]any{"model": "claude-sonnet-4-5", "messages": []any{
			map[string]any{"role": "user", "content": "Open the catalogue and click Place order."},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "Read", "input": map[string]any{}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": s}}},
		}})
		obs, err := Find(body, focusgate.APIMessages, Options{All: true})
		if err != nil || len(obs) != tt.trees || obs[len(obs)-1].Text != tail || obs[0].Goal != "Open the catalogue and click Place order." {
			t.Fatalf("%s in a Messages body: %d observations, %v", tt.file, len(obs), err)
		}
		for _, o := range obs {
			checkRaw(t, body, o)
		}
	}
}

// Peeling never makes a page of prose: the negative corpus, in every
// wrapper, holds no tree.
func TestLayersFindNoTreeInTheNegativeCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/negative/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		text := readFile(t, file)
		for _, w := range wrappers {
			if hits, _ := findTrees(w.wrap(t, text), nil); len(hits) != 0 {
				t.Errorf("%s in %q: %d trees, the first %.80q", filepath.Base(file), w.name, len(hits), hits[0].text[hits[0].block.Start:])
			}
		}
	}
}

// BenchmarkLayers measures finding a 175 KB page through the wrappers of
// real clients, against the page as the tool printed it.
func BenchmarkLayers(b *testing.B) {
	page := strings.TrimRight(readFile(b, filepath.Join(sharedAXTrees, "bgym-pr301_web_amazon_macbook.txt")), "\n")
	by := map[string]wrapper{}
	for _, w := range wrappers {
		by[w.name] = w
	}
	for _, stack := range [][]string{
		{},
		{"Claude Code Read"},
		{"opencode read"},
		{"JSON.stringify of the MCP content", "Cline cut"},
		{"saved JSON file, indented", "Claude Code Read", "Claude Code's system-reminder after the output"},
	} {
		w := page
		for _, n := range stack {
			w = by[n].wrap(b, w)
		}
		b.Run(strings.Join(append([]string{"page"}, stack...), "+"), func(b *testing.B) {
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				if hits, _ := findTrees(w, nil); len(hits) == 0 {
					b.Fatal("no tree")
				}
			}
		})
	}
}

// Stacks of wrappers far deeper than any client's look at a few times
// their text, well inside the bound, because a view inside an earlier
// layer's view is not searched twice.
func TestSearchIsBounded(t *testing.T) {
	page := layerPages(t)[0]
	by := map[string]wrapper{}
	for _, w := range wrappers {
		by[w.name] = w
	}
	for _, stack := range [][]string{
		{"Cline cut", "Claude Code Read", "Cline cut", "Claude Code Read", "Cline cut", "Claude Code Read", "Cline cut", "Claude Code Read"},
		{"JSON.stringify of the MCP content", "Cline cut", "opencode read", "Codex cut", "JSON.stringify of the MCP content", "Cline cut", "opencode read", "Codex cut"},
		{"the page twice", "Codex cut", "arrow", "Gemini CLI cut", "cat -n from line 40", "Qwen Code cut", "Claude Code Read", "opencode cut"},
	} {
		w := page
		for _, n := range stack {
			w = by[n].wrap(t, w)
		}
		const unbounded = 1 << 40
		sr := searcher{budget: unbounded}
		sr.search(w, 0)
		if used := float64(unbounded-sr.budget) / float64(len(w)); used > searchFactor/2 {
			t.Errorf("%v: views of %.1f times the text", stack, used)
		}
	}
}
