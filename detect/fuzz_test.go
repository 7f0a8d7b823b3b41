package detect

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
)

// treeSeeds are small texts around the grammars' edges.
var treeSeeds = []string{
	bgTree,
	webArenaTree,
	occamTree,
	playwrightTree,
	browserUseTree,
	stagehandTree,
	chromeTree,
	"Instruction: buy it\nDOM: [0-2] RootWebArea: x\n  [0-3] a\n [0-4] b\n  [1-2]\n  [0-5] link: \n\t[0-6] c",
	"uid=1_0 x \"\n\"\n  uid=1_1 \"a\" k=\"v\" b\n  uid=1_2 r \"\n  uid=1_3\n   uid=1_4 r\nuid=x_1",
	agentLabNotes + bgTree + "\n\n## Focused element:\nbid='14'\n",
	"\t[1] link 'open\nstill open\n\t[2] link 'x'\n",
	"[1] link 'a\n\n[2] link 'b'",
	"\t[12] link 'it's here', clickable\n\r\n\t[13] link \"",
	"- 'option \"a'' b\"':\n  - /url: x\n- \"\n",
	"*[1]<a >text\nmore\n[End of page]\n[2]<b\n|X+1]<i />\n|SCROLL|",
	"RootWebArea 'x'\r\n\t[1] generic, a=\r\n",
	"```yaml\n- generic [ref=e1]:\n```",
}

func FuzzGrammars(f *testing.F) {
	for _, s := range treeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for p := 0; p < len(s); p = lineEnd(s, p) + 1 {
			for _, g := range grammars {
				if el, ok := g.parse(s, p); ok {
					checkElement(t, s, p, el)
				}
				run, next := g.collect(s, p, nil)
				at := p
				for _, el := range run {
					if el.Start != at {
						t.Fatalf("%s run from %d: element at %d, want %d", g.name, p, el.Start, at)
					}
					checkElement(t, s, at, el)
					at = el.next
				}
				if next < p || len(run) > 0 && next != at {
					t.Fatalf("%s run from %d ends at %d after elements up to %d", g.name, p, next, at)
				}
			}
		}
	})
}

func checkElement(t *testing.T, s string, p int, el element) {
	t.Helper()
	switch {
	case el.Start != p || el.End < p || el.End > len(s):
		t.Fatalf("element %d..%d parsed at %d of %d bytes", el.Start, el.End, p, len(s))
	case el.End < len(s) && s[el.End] != '\n':
		t.Fatalf("element ends at %d inside a line", el.End)
	case el.next != el.End+1:
		t.Fatalf("element ends at %d but the next starts at %d", el.End, el.next)
	case el.Depth < 0 || !strings.Contains(s[el.Start:el.End], el.BID) || !strings.Contains(s[el.Start:el.End], el.Role):
		t.Fatalf("element %+v is not read from its own text", el.Line)
	}
}

func FuzzBlocks(f *testing.F) {
	for _, s := range treeSeeds {
		f.Add(s)
	}
	f.Add(readFile(f, filepath.Join(sharedAXTrees, "webarena-fmt_step-fewshot_gitlab_issues.txt")))
	f.Add(readFile(f, "testdata/negative/Makefile"))
	f.Fuzz(func(t *testing.T, s string) {
		blocks := Blocks(s)
		prev := 0
		for _, b := range blocks {
			if b.Start < prev || b.Start > b.End || b.End > len(s) {
				t.Fatalf("block %d..%d after %d in %d bytes", b.Start, b.End, prev, len(s))
			}
			if b.Start > 0 && s[b.Start-1] != '\n' || b.End < len(s) && s[b.End] != '\n' {
				t.Fatalf("block %d..%d does not start and end on line boundaries", b.Start, b.End)
			}
			checkLines(t, b, s[b.Start:b.End])
			// Replacing the span with its own lines, as a pruner that keeps every line
			// would, gives back the input.
			lines := make([]string, len(b.Lines))
			for i, l := range b.Lines {
				lines[i] = s[b.Start+l.Start : b.Start+l.End]
			}
			if got := s[:b.Start] + strings.Join(lines, "\n") + s[b.End:]; got != s {
				t.Fatalf("rebuilding the span from its lines gives %q, want %q", got, s)
			}
			again := Blocks(s[b.Start:b.End])
			if len(again) != 1 || again[0].Start != 0 || again[0].End != b.End-b.Start || again[0].Format != b.Format || !slices.Equal(again[0].Lines, b.Lines) {
				t.Fatalf("the tree %q alone is not detected as the same block", s[b.Start:b.End])
			}
			prev = b.End
		}
	})
}

// checkLines verifies that the lines of a block tile its text exactly.
func checkLines(t *testing.T, b Block, tree string) {
	t.Helper()
	if len(b.Lines) < MinLines {
		t.Fatalf("block of %d lines", len(b.Lines))
	}
	at, minDepth := 0, b.Lines[0].Depth
	for i, l := range b.Lines {
		if l.Start != at || l.End < l.Start || l.End > len(tree) || l.Depth < 0 {
			t.Fatalf("line %d is %+v, want it to start at %d inside %d bytes", i, l, at, len(tree))
		}
		if l.End < len(tree) && tree[l.End] != '\n' {
			t.Fatalf("line %d ends inside a line", i)
		}
		at, minDepth = l.End+1, min(minDepth, l.Depth)
	}
	if at != len(tree)+1 || minDepth != 0 {
		t.Fatalf("lines end at %d of %d bytes, least depth %d", at-1, len(tree), minDepth)
	}
	if b.FocusedBID != bidValue(b.FocusedBID) {
		t.Fatalf("focused element %q is not an id", b.FocusedBID)
	}
}

func FuzzFind(f *testing.F) {
	for _, path := range requestFiles(f) {
		f.Add(readFile(f, path), false)
	}
	for _, s := range treeSeeds {
		f.Add(string(chatBody(f, message{Role: "user", Content: s}, message{Role: "tool", Content: []part{{"text", s}}})), true)
	}
	f.Add(`{"input":[{"type":"function_call_output","output":"`+strings.ReplaceAll(strings.ReplaceAll(bgTree, "\n", `\u000A`), "\t", `\t`)+`"}],"instructions":"x"}`, true)
	f.Add(`{"messages":[{"role":"user","content":"\ud800\n\udc00\u0000\"\/\\"}]}`, false)
	// Escaped roles and types, read as the upstream reads them.
	f.Add(`{"messages":[{"role":"u\u0073er","content":[{"type":"t\u0065xt","text":"`+strings.ReplaceAll(strings.ReplaceAll(bgTree, "\n", `\n`), "\t", `\t`)+`"}]}]}`, false)
	f.Add(`{"input":[{"type":"function_c\u0061ll_output","output":"x"},{"role":"\u0061ssistant","content":"y"}]}`, true)
	for _, s := range []string{playwrightTree, chromeTree, stagehandTree} {
		parts := string(mustJSON(f, []part{{"text", "### Snapshot\n```yaml\n" + s + "\n```"}}))
		f.Add(string(chatBody(f, message{Role: "tool", Content: parts})), false)
	}
	// Issue 30: the page twice on one escaped line of a numbered read.
	twice := string(mustJSON(f, []part{{"text", "### Page\n```yaml\n" + playwrightTree + "\n```\n### Again\n```yaml\n" + playwrightTree + "\n```"}}))
	f.Add(string(chatBody(f, message{Role: "user", Content: "Save."}, message{Role: "tool", Content: "1\t[\n2\t" + twice[1:len(twice)-1] + "\n3\t]"})), true)
	f.Add(string(geminiCLIBody(f, "### Snapshot\n```yaml\n"+playwrightTree+"\n```")), true)
	f.Add(`{"generateContentRequest":{"contents":[{"parts":[{"text":"\u003csession_context\u003e"},{"functionResponse":{"response":{"a":[{"b":"x\ny"}]}}}]}]}}`, false)
	// Converse: blocks keyed by their member, a page as a tool result's
	// text and in a json value, and the blocks never searched.
	f.Add(string(converseBody(f, converseTurn("user", map[string]any{"text": "Buy it."}),
		converseTurn("assistant", map[string]any{"toolUse": map[string]any{"toolUseId": "t", "name": "snap", "input": map[string]any{"a": 1}}}),
		converseTurn("user", map[string]any{"toolResult": map[string]any{"toolUseId": "t", "content": []any{
			map[string]any{"text": "### Snapshot\n```yaml\n" + playwrightTree + "\n```"}, map[string]any{"json": map[string]any{"s": []any{chromeTree}}}}}}))), true)
	f.Add(`{"system":[{"text":"s"},{"guardContent":{"text":{"text":"g"}}}],"messages":[{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"r"}}},{"toolUse":{"name":"","input":null}}]},{"role":"user","content":[{"toolResult":{"content":[{"json":"x\ny"},{"image":{}}]}},{"cachePoint":{}}]}]}`, false)
	f.Fuzz(func(t *testing.T, body string, all bool) {
		b := []byte(body)
		wantOK := json.Valid(b) && bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{"))
		for _, api := range focusgate.APIs {
			obs, err := Find(b, api, Options{All: all})
			if err != nil && !errors.Is(err, ErrNotJSON) {
				t.Fatalf("error %v does not wrap ErrNotJSON", err)
			}
			if (err == nil) != wantOK {
				t.Fatalf("Find error %v, but json.Valid says %v", err, wantOK)
			}
			if len(obs) > 0 && !MayHoldPage(b) {
				t.Fatalf("%d observations in a body MayHoldPage turns away", len(obs))
			}
			if !all && len(obs) > 1 {
				t.Fatalf("%d observations without Options.All", len(obs))
			}
			for _, o := range obs {
				checkRaw(t, b, o)
				checkLines(t, o.Block, o.Text)
			}
		}
	})
}

// FuzzCursor checks the map from decoded offsets to raw ones that places a
// tree found inside a JSON string: at every line start and end of the
// decoded text, the raw prefix decodes to the decoded prefix.
func FuzzCursor(f *testing.F) {
	f.Add(`a\nb\u000ac\n`)
	f.Add(`[{\"text\":\"- a\\n- b\"}]\n\ud83d\ude00\n\u00e9\n`)
	f.Add("\xff\n\\ud800\\n\xe2\x82\n")
	f.Fuzz(func(t *testing.T, s string) {
		lit, err := json.Marshal(s)
		if err != nil {
			t.Skip()
		}
		raw := string(lit[1 : len(lit)-1])
		if strings.Contains(s, `\`) {
			// Also try the string as raw content when it is valid as such.
			if _, next, err := scanString([]byte(`"`+s+`"`), 0); err == nil && next == len(s)+2 {
				raw = s
			}
		}
		text := unquote(raw)
		var offsets []int
		for i := 0; i < len(text); i++ {
			if text[i] == '\n' {
				offsets = append(offsets, i, i+1)
			}
		}
		offsets = append(offsets, len(text))
		c := newCursor(raw)
		for _, d := range offsets {
			at := c.at(d)
			if got := unquote(raw[:at]); got != text[:d] {
				t.Fatalf("offset %d maps to raw %d, which decodes to %q, want %q", d, at, got, text[:d])
			}
		}
		if got := appendEscaped(nil, text, 1); unquote(string(got)) != text {
			t.Fatalf("%q escaped to %q, which decodes to %q", text, got, unquote(string(got)))
		}
	})
}
