package pipeline

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
)

func TestAppendJSONStringContent(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"tab\tnew\nline\r", `tab\tnew\nline\r`},
		{`quote " backslash \`, `quote \" backslash \\`},
		{"<b>&</b>", "<b>&</b>"},
		{"\x00\x1f", `\u0000\u001f`},
		{"é ✓ 😀", "é ✓ 😀"},
		{"bad \xff byte", "bad \xff byte"},
		{"lone \xed\xa0\x80 high, \xed\xbf\xbf low", `lone \ud800 high, \udfff low`},
		{"surrogate-like \xed\x9f\xbf is U+D7FF", "surrogate-like \xed\x9f\xbf is U+D7FF"},
		{"sep\u2028\u2029", `sep\u2028\u2029`},
	}
	for _, tt := range tests {
		if got := string(appendJSONStringContent(nil, tt.in)); got != tt.want {
			t.Errorf("escape %q = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestSpliceReplacesOnlyTheEdits(t *testing.T) {
	body := []byte(`{"a":"keep \u003c this","b":"one\ntwo\nthree","n":12345678901234567890}`)
	start := strings.Index(string(body), `two`)
	got := splice(body, []edit{{start: start, end: start + len("two"), text: "2 \"quoted\"\n<x>"}})
	want := `{"a":"keep \u003c this","b":"one\n2 \"quoted\"\n<x>\nthree","n":12345678901234567890}`
	if string(got) != want {
		t.Errorf("splice:\n got %s\nwant %s", got, want)
	}
}

func FuzzAppendJSONStringContent(f *testing.F) {
	for _, s := range []string{"", "a\nb", "\"\\", "\xff\xfe", "\u2028", "<&>", "\x00", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lit := `"` + string(appendJSONStringContent(nil, s)) + `"`
		var back string
		if err := json.Unmarshal([]byte(lit), &back); err != nil {
			t.Fatalf("%q escaped to invalid JSON %s: %v", s, lit, err)
		}
		// encoding/json is the reference for valid text; what it makes of
		// invalid text is checked against detect in FuzzKeptTextRoundTrips.
		if utf8.ValidString(s) && back != s {
			t.Fatalf("round trip of %q gave %q", s, back)
		}
	})
}

// FuzzSpliceNested checks the splice of a tree that sits in a JSON text inside
// a JSON string (a tool result passed through JSON.stringify): whatever the
// replacement, the body stays JSON, its string decodes to JSON, and that
// JSON's string decodes to the text around the tree with the replacement in
// the tree's place.
func FuzzSpliceNested(f *testing.F) {
	f.Add("### Snapshot\n```yaml\n", "- generic [ref=e1]:\n  - link \"a\" [ref=e2]", "\n```\n", "- generic [ref=e1]:\n  - ... 1 line pruned ...")
	f.Add("<b>&\"q\"</b>\\", "x", "\u2028\t", "\"\\\n\u2028\x01\xff é")
	f.Add("", "", "", "\ud7ff\U0001F600")
	f.Fuzz(func(t *testing.T, pre, old, post, replacement string) {
		esc := func(s string) string { return string(appendJSONStringContent(nil, s)) }
		twice := func(s string) string { return esc(esc(s)) }
		head := `{"model":"m","messages":[{"role":"tool","content":"` + esc(`[{"type":"text","text":"`) + twice(pre)
		body := head + twice(old) + twice(post) + esc(`"}]`) + `"}]}`
		start := len(head)
		out := splice([]byte(body), []edit{{start: start, end: start + len(twice(old)), text: replacement, nested: 1}})

		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		if err := json.Unmarshal(out, &req); err != nil || len(req.Messages) != 1 {
			t.Fatalf("spliced body is not JSON (%v): %s", err, out)
		}
		var parts []struct{ Type, Text string }
		if err := json.Unmarshal([]byte(req.Messages[0].Content), &parts); err != nil || len(parts) != 1 {
			t.Fatalf("the string no longer holds JSON (%v): %q", err, req.Messages[0].Content)
		}
		// What a string becomes through one JSON encoding (invalid bytes are
		// replaced), the reference for the text inside.
		through := func(s string) string {
			var back string
			if err := json.Unmarshal([]byte(`"`+esc(s)+`"`), &back); err != nil {
				t.Fatal(err)
			}
			return back
		}
		if want := through(pre) + through(replacement) + through(post); parts[0].Text != want {
			t.Fatalf("inner text %q, want %q", parts[0].Text, want)
		}
	})
}

// A client that escapes more than it must (Python's ensure_ascii writes
// `\u00e9`, some encoders `\/`) gets every line that is kept back as it
// sent it, at the top level and inside a JSON text in a string; the
// markers focusgate writes are escaped the usual way, and the body decodes
// to the pruned text.
func TestSpliceKeepsTheEscapesOfKeptLines(t *testing.T) {
	var tree strings.Builder
	tree.WriteString("- generic [ref=e1]:\n")
	for i := 2; i <= 12; i++ {
		fmt.Fprintf(&tree, "  - link \"Caf\u00e9 %d\" [ref=e%d]:\n    - /url: https://x.test/%d\n", i, i, i)
	}
	page := strings.TrimSuffix(tree.String(), "\n")
	pyEscape := func(s string) string { // json.dumps with ensure_ascii, and \/
		b, _ := json.Marshal(s)
		e := strings.ReplaceAll(string(b[1:len(b)-1]), "é", `\u00e9`)
		return strings.ReplaceAll(e, "/", `\/`)
	}
	for _, nested := range []int{0, 1} {
		content := pyEscape("Page:\n" + page)
		if nested == 1 {
			content = pyEscape(`[{"type":"text","text":"` + pyEscape("Page:\n"+page) + `"}]`)
		}
		body := []byte(`{"model":"m","messages":[{"role":"user","content":"Open Caf\u00e9 7."},{"role":"tool","tool_call_id":"a","content":"` + content + `"}]}`)
		obs, err := detect.Find(body, focusgate.APIChat, detect.Options{})
		if err != nil || len(obs) != 1 || obs[0].Nested != nested {
			t.Fatalf("nested %d: found %d observations, %v", nested, len(obs), err)
		}
		o := obs[0]
		lines := strings.Split(o.Text, "\n")
		pruned := strings.Join([]string{lines[0], "  ... 10 lines pruned, caf\u00e9 ...", lines[11], lines[12], "  ... 10 lines pruned ..."}, "\n")
		got := splice(body, []edit{{start: o.RawStart, end: o.RawEnd, text: pruned, nested: o.Nested,
			lines: func() (string, []string, string, bool) {
				l, nl, ok := o.RawLines(body[o.RawStart:o.RawEnd])
				return o.Text, l, nl, ok
			}}})
		var msg struct{ Messages []struct{ Content string } }
		if err := json.Unmarshal(got, &msg); err != nil {
			t.Fatalf("nested %d: %v", nested, err)
		}
		text := msg.Messages[1].Content
		if nested == 1 {
			var parts []struct{ Text string }
			if err := json.Unmarshal([]byte(text), &parts); err != nil {
				t.Fatalf("the JSON text in the string: %v", err)
			}
			text = parts[0].Text
		}
		if text != "Page:\n"+pruned {
			t.Errorf("nested %d: the body decodes to %q", nested, text)
		}
		kept := pyEscape(lines[11])
		if nested == 1 {
			kept = pyEscape(kept)
		}
		if !strings.Contains(string(got), kept) || !strings.Contains(string(got), "caf\u00e9") {
			t.Errorf("nested %d: a kept line lost its escapes, or a marker got unusual ones:\n%s", nested, got)
		}
	}
}

// unusualEscapes may say yes for standard text (the kept lines are then
// compared one by one) but never no for an escape the standard escaping
// would not write, at any nesting level.
func TestUnusualEscapes(t *testing.T) {
	for raw, want := range map[string]bool{
		`one\ntwo\t\"x\" \\ done`: false,
		`https:\/\/x`:             true,
		`caf\u00e9`:               true,
		`caf\\u00e9`:              true, // \u00e9 one level down
		"raw \u2028 separator":    true,
		`\b\f`:                    true,
		`trailing \`:              false,
	} {
		if got := unusualEscapes([]byte(raw)); got != want {
			t.Errorf("unusualEscapes(%s) = %v, want %v", raw, got, want)
		}
	}
}
