package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
)

// pyEscape escapes as Python's json.dumps with ensure_ascii does, and `\/`
// as some other encoders do: more than appendEscaped would.
func pyEscape(s string) string {
	b, _ := json.Marshal(s)
	e := strings.ReplaceAll(string(b[1:len(b)-1]), "é", `\u00e9`)
	return strings.ReplaceAll(e, "/", `\/`)
}

// cafePage is a Playwright snapshot whose every other line has an é and a
// slash.
func cafePage() string {
	var tree strings.Builder
	tree.WriteString("- generic [ref=e1]:\n")
	for i := 2; i <= 12; i++ {
		fmt.Fprintf(&tree, "  - link \"Caf\u00e9 %d\" [ref=e%d]:\n    - /url: https://x.test/%d\n", i, i, i)
	}
	return strings.TrimSuffix(tree.String(), "\n")
}

// Two pages of one body, pruned: everything outside their spans stays as
// it came, and each span decodes to its pruned page.
func TestSpliceReplacesOnlyTheEdits(t *testing.T) {
	page := cafePage()
	body := []byte(`{"model":"m","n":12345678901234567890,"messages":[{"role":"user","content":"Open Caf\u00e9 7. \u003c"},` +
		`{"role":"tool","tool_call_id":"a","content":"` + pyEscape(page) + `"},{"role":"tool","tool_call_id":"b","content":"` + pyEscape(page) + `"}],"z":"\/"}`)
	obs, err := detect.Find(body, focusgate.APIChat, detect.Options{All: true})
	if err != nil || len(obs) != 2 {
		t.Fatalf("found %d observations, %v", len(obs), err)
	}
	n := len(obs[0].Lines)
	pieces := []focusgate.Piece{{Kind: focusgate.PieceKept, From: 0, To: 1}, {Kind: focusgate.PieceMarker, From: 1, To: n, Text: "  - ... pruned ..."}}
	// The later page first: splice orders the edits.
	got := splice(body, []edit{{&obs[1], pieces}, {&obs[0], pieces}})
	want := strings.NewReplacer(pyEscape(page), `- generic [ref=e1]:\n  - ... pruned ...`).Replace(string(body))
	if string(got) != want {
		t.Errorf("splice:\n got %s\nwant %s", got, want)
	}
}

// A client that escapes more than it must (Python's ensure_ascii writes
// `\u00e9`, some encoders `\/`) gets every line that is kept back as it
// sent it, at the top level and inside a JSON text in a string; the
// markers focusgate writes are escaped the usual way, and the body decodes
// to the pruned text.
func TestSpliceKeepsTheEscapesOfKeptLines(t *testing.T) {
	page := cafePage()
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
		marker := "  ... 10 lines pruned, caf\u00e9 ..."
		pruned := strings.Join([]string{lines[0], marker, lines[11], lines[12], "  ... 10 lines pruned ..."}, "\n")
		got := splice(body, []edit{{&o, []focusgate.Piece{
			{Kind: focusgate.PieceKept, From: 0, To: 1},
			{Kind: focusgate.PieceMarker, From: 1, To: 11, Text: marker},
			{Kind: focusgate.PieceKept, From: 11, To: 13},
			{Kind: focusgate.PieceMarker, From: 13, To: len(lines), Text: "  ... 10 lines pruned ..."},
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
		kept := pyEscape(lines[11] + "\n" + lines[12])
		if nested == 1 {
			kept = pyEscape(kept)
		}
		if !bytes.Contains(got, []byte(kept)) || !bytes.Contains(got, []byte("caf\u00e9")) {
			t.Errorf("nested %d: a kept line lost its escapes, or a marker got unusual ones:\n%s", nested, got)
		}
	}
}
