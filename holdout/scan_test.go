package holdout

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// members and elements find what gjson finds in a valid body: the first
// member of a name, and every element in order, each as the raw JSON it is.
func FuzzScan(f *testing.F) {
	for _, s := range []string{
		`{"model":"gpt-4.1","messages":[{"role":"user","content":"a \"quoted\" \\ word"}]}`,
		`{ "messages" : [ 1 , -2.5e3 , true , null , [ ] , { } , "x\\\\" ] , "model" : "m" }`,
		`{"a":{"messages":[1]},"messages":[2],"messages":[3]}`,
		`{"messages":"not a list"}`,
		`[1,2]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !gjson.Valid(s) || !gjson.Parse(s).IsObject() {
			return
		}
		escapedKey := false
		gjson.Parse(s).ForEach(func(k, _ gjson.Result) bool {
			escapedKey = escapedKey || strings.Contains(k.Raw, `\`)
			return true
		})
		if escapedKey {
			return // keys are compared as they are written
		}
		for _, name := range []string{"messages", "model", "a"} {
			got, want := value(s, member(s, 0, name)), gjson.Get(s, name)
			if want.Exists() != (got != "") || want.Exists() && got != want.Raw {
				t.Fatalf("member %q of %q: %q, want %q", name, s, got, want.Raw)
			}
			if !want.IsArray() {
				continue
			}
			var gotElems, wantElems []string
			elements(s, member(s, 0, name), func(e string) bool { gotElems = append(gotElems, e); return true })
			want.ForEach(func(_, e gjson.Result) bool { wantElems = append(wantElems, e.Raw); return true })
			if strings.Join(gotElems, "\x00") != strings.Join(wantElems, "\x00") {
				t.Fatalf("elements of %q in %q: %q, want %q", name, s, gotElems, wantElems)
			}
		}
	})
}

// goalText, which stops decoding a turn's parts once the goal section is
// known, gives what goalOf gives over the whole text.
func FuzzGoalText(f *testing.F) {
	for _, s := range []string{
		`[{"type":"text","text":"# Instructions\nAct.\n\n## Goal:\n"},{"type":"text","text":"Order 10 laptops"},{"type":"text","text":"\n# Observation of current step:\n[12] button 'A'"}]`,
		`[{"type":"text","text":"## Goal:\nBuy"},{"type":"text","text":"# Page\n[1] link"}]`,
		`[{"type":"text","text":"## Goal:\nBuy\n"},{"type":"text","text":"\n# Page"},{"type":"text","text":"## Goal: later"}]`,
		`[{"type":"text","text":"x\n## Goal: a\n# b"},{"type":"image_url"},{"text":"\n# c"}]`,
		`[{"type":"text","text":"# Goal\nFind it"},{"type":"text","text":"\n## Goal: this one wins"}]`,
		`"OBSERVATION:\n[1] link 'a'\nOBJECTIVE: Find the cheapest TV\nPREVIOUS ACTION: None"`,
		`[{"text":"## Goal:\u000aBuy"},{"text":"\u000a# Page"}]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		if !gjson.Valid(content) {
			return
		}
		if got, want := goalText(content), goalOf(text(gjson.Parse(content))); got != want {
			t.Fatalf("goalText(%q) = %q, want %q", content, got, want)
		}
	})
}
