package detect

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
)

// A remembered string is recognised in a body where the same bytes start a
// string and a quote closes them; a string that only begins with them is
// another string.
func TestStringsAreRecognisedWhereTheyStart(t *testing.T) {
	raw := strings.Repeat(`- link \"Home\" [ref=e3]\n`, 40) // longer than a head
	s := newStrMemory(1 << 20)
	s.put([]byte(raw), searched{text: "the page"}, 0)
	s.put([]byte(raw+`\\`), searched{text: "the page and a backslash"}, 0)

	tests := []struct {
		name   string
		string string // what follows the opening quote
		want   string // the text found, "" for none
	}{
		{"the same string", raw + `","role":"tool"}`, "the page"},
		{"longer", raw + `more","role":"tool"}`, ""},
		{"longer by an escaped quote", raw + `\"","role":"tool"}`, ""},
		{"closed after an escaped backslash", raw + `\\"}`, "the page and a backslash"},
		{"cut short", raw, ""},
		{"the start only", raw[:headBytes+10] + `"}`, ""},
	}
	for _, tt := range tests {
		b := []byte(`{"content":"` + tt.string)
		start := len(`{"content":"`)
		got, end, ok := s.at(b, start)
		if ok != (tt.want != "") || got.text != tt.want {
			t.Errorf("%s: at = %q, %v; want %q", tt.name, got.text, ok, tt.want)
			continue
		}
		if ok && (b[end] != '"' || string(b[start:end]) != raw && string(b[start:end]) != raw+`\\`) {
			t.Errorf("%s: the string ends at %d, not after what was remembered", tt.name, end)
		}
	}

	short := `a short string\n`
	s.put([]byte(short), searched{text: "short"}, 0)
	if _, _, ok := s.at([]byte(`"`+short+`"`+strings.Repeat(" ", headBytes)), 1); ok {
		t.Errorf("a string shorter than a head was looked for where it starts")
	}
	if got, ok := s.get([]byte(short)); !ok || got.text != "short" {
		t.Errorf("get(short) = %q, %v", got.text, ok)
	}
}

// Strings that begin alike, as snapshots of one site do, are remembered side
// by side: the newest maxSameHead of them, within what one head may hold.
func TestStringsThatBeginAlike(t *testing.T) {
	prefix := strings.Repeat(`- generic [ref=e1]:\n`, 30)
	page := func(i int) string { return prefix + fmt.Sprintf(`- text: step %d\n`, i) }
	s := newStrMemory(64 << 20)
	const n = maxSameHead + 10
	for i := range n {
		s.put([]byte(page(i)), searched{text: fmt.Sprint(i)}, 0)
	}
	for i := range n {
		want := i >= n-maxSameHead
		b := []byte(`"` + page(i) + `"`)
		got, _, ok := s.at(b, 1)
		if ok != want || ok && got.text != fmt.Sprint(i) {
			t.Errorf("string %d: at = %q, %v; want found %v", i, got.text, ok, want)
		}
		if got, ok := s.get([]byte(page(i))); ok != want || ok && got.text != fmt.Sprint(i) {
			t.Errorf("string %d: get = %q, %v; want found %v", i, got.text, ok, want)
		}
	}

	// Within a small memory, the strings of one head hold no more than a
	// quarter of it: the oldest give way.
	small := newStrMemory(16 << 10)
	for i := range 20 {
		small.put([]byte(page(i)), searched{}, 200)
	}
	list, _ := small.m.Get(string(head([]byte(page(0)))))
	total := 0
	for _, r := range list {
		total += r.size
	}
	if len(list) == 0 || total > small.perHead || list[0].raw != page(19) {
		t.Errorf("one head holds %d strings, %d bytes, newest first %v; want at most %d bytes", len(list), total, len(list) > 0 && list[0].raw == page(19), small.perHead)
	}

	// A string put again is not remembered twice.
	s.put([]byte(page(n-1)), searched{text: "again"}, 0)
	list, _ = s.m.Get(string(head([]byte(page(0)))))
	if len(list) != maxSameHead || list[0].text != "again" {
		t.Errorf("after a string was put again: %d strings, the first %q", len(list), list[0].text)
	}
}

// Two snapshots of one site that begin alike, both sent again in the next
// request of a tool loop, are both recognised: each comes with what was
// worked out about it the first time.
func TestFinderRemembersPagesThatBeginAlike(t *testing.T) {
	snapshot := func(field string) string {
		return "### Page state\n- Page URL: https://shop.example/cart\n- Page Title: Cart\n- Page Snapshot:\n```yaml\n" +
			strings.Repeat(playwrightTree, 4) + "  - textbox \"Coupon\" [ref=e90]: " + field + "\n```"
	}
	body := func(steps ...string) []byte {
		msgs := []message{{Role: "user", Content: "Apply the coupon."}}
		for _, s := range steps {
			msgs = append(msgs, message{Role: "tool", Content: s})
		}
		return chatBody(t, msgs...)
	}
	a, b := snapshot(""), snapshot("SAVE10")
	if len(head([]byte(a))) != headBytes || string(head(mustJSON(t, a))) != string(head(mustJSON(t, b))) {
		t.Fatalf("the snapshots must begin alike for a whole head")
	}
	f := NewFinder(64 << 20)
	first, err := f.Find(body(a, b), focusgate.APIChat, Options{All: true})
	if err != nil || len(first) != 2 {
		t.Fatalf("Find = %d observations, %v; want 2", len(first), err)
	}
	again, err := f.Find(body(a, b), focusgate.APIChat, Options{All: true})
	if err != nil || len(again) != 2 {
		t.Fatalf("found again: %d observations, %v", len(again), err)
	}
	for i := range again {
		if again[i].Known != first[i].Known {
			t.Errorf("snapshot %d was searched again, not recognised", i)
		}
	}
}

// FuzzFinderMemory holds that what a Finder remembers of one body never
// changes what it finds in the next: a body read after another is read as
// Find reads it with no memory at all.
func FuzzFinderMemory(f *testing.F) {
	page := string(mustJSON(f, "### Snapshot\n```yaml\n"+strings.Repeat(playwrightTree, 3)+"\n```"))
	page = page[1 : len(page)-1]
	tool := func(content string) string {
		return `{"model":"gpt-4.1","messages":[{"role":"user","content":"Buy it"},{"role":"tool","content":"` + content + `"}]}`
	}
	f.Add(tool(page), tool(page), false)
	f.Add(tool(page), tool(page+`\"x`), true)
	f.Add(tool(page), tool(page+`x`), false)
	f.Add(tool(page+`\\`), tool(page+`\\`), false)
	f.Add(tool(page), tool(page[:headBytes+40]+`"}]}`), true)
	f.Add(tool(page), `{"messages":[{"role":"tool","content":"`+page+`"`, false)
	f.Add(tool(page), `{"messages":[{"role":"assistant","content":"`+page+`"}]}`, false)
	f.Fuzz(func(t *testing.T, first, next string, all bool) {
		fd := NewFinder(1 << 20)
		for _, api := range []focusgate.API{focusgate.APIChat, focusgate.APIMessages} {
			fd.Find([]byte(first), api, Options{All: all})
			got, gotErr := fd.Find([]byte(next), api, Options{All: all})
			want, wantErr := Find([]byte(next), api, Options{All: all})
			for k := range got {
				got[k].written, got[k].Known = nil, nil
			}
			for k := range want {
				want[k].Known = nil
			}
			if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				t.Fatalf("%s, after another body: %s, %v\nwithout memory: %s, %v", api, g, gotErr, w, wantErr)
			}
		}
	})
}

// Strings planted to share a head, a length and an ending with a page cost
// each look-up of it maxCompares whole comparisons at most; the page, no
// longer found, is searched anew and put first, and found again after that.
func TestLookalikesCostBoundedComparisons(t *testing.T) {
	prefix, suffix := strings.Repeat(`- generic [ref=e1]:\n`, 30), strings.Repeat(`- contentinfo [ref=e9]\n`, 4)
	page := func(i int) string { return prefix + fmt.Sprintf(`- text: %04d\n`, i) + suffix }
	s := newStrMemory(64 << 20)
	s.put([]byte(page(0)), searched{text: "the page"}, 0)
	for i := 1; i <= maxCompares+2; i++ {
		s.put([]byte(page(i)), searched{text: "a lookalike"}, 0)
	}
	found := func() bool {
		_, _, atOK := s.at([]byte(`"`+page(0)+`"`), 1)
		_, getOK := s.get([]byte(page(0)))
		if atOK != getOK {
			t.Fatalf("at found the page %v, get %v", atOK, getOK)
		}
		return atOK
	}
	if found() {
		t.Errorf("the page was found behind %d lookalikes: more than %d whole comparisons", maxCompares+2, maxCompares)
	}
	if _, _, ok := s.at([]byte(`"`+page(maxCompares+2)+`"`), 1); !ok {
		t.Errorf("the newest lookalike was not found")
	}
	s.put([]byte(page(0)), searched{text: "the page"}, 0)
	if !found() {
		t.Errorf("the page put again was not found")
	}
}
