package pipeline

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
)

// treeRequest is a chat request whose page has one line named by the JSON
// string content name, between ordinary lines.
func treeRequest(name []byte) []byte {
	var b bytes.Buffer
	b.WriteString(`{"model":"gpt-4.1","messages":[{"role":"user","content":"## AXTree:\nRootWebArea 'Shop'\n`)
	for i := range 6 {
		fmt.Fprintf(&b, `\t[a%d] link 'Item %d'\n`, i, i)
	}
	b.WriteString(`\t[b1] link '`)
	b.Write(name)
	b.WriteString(`'\n`)
	for i := range 6 {
		fmt.Fprintf(&b, `\t[c%d] button 'Add %d'\n`, i, i)
	}
	b.WriteString(`\n## Focused element:\nNone\n"}]}`)
	return b.Bytes()
}

// Text focusgate keeps leaves exactly as it came: decoding a page with
// detect and encoding it again with appendJSONStringContent gives back the
// request's bytes, invalid UTF-8 and lone surrogates included.
func FuzzKeptTextRoundTrips(f *testing.F) {
	for _, s := range []string{"Deals", "De\xffals", "\xed\xa0\x80", "\xed\xb0\x80 and \xed\xa0\xbd", "emoji 😀", "\xf0\x9f\x98", "quote \" and \\", "\x00\x1f", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsAny(s, "\n\r") {
			t.Skip("a newline makes another line")
		}
		body := treeRequest(appendJSONStringContent(nil, s))
		obs, err := detect.Find(body, focusgate.APIChat, detect.Options{})
		if err != nil || len(obs) != 1 {
			t.Skipf("not one observation (%d, %v)", len(obs), err)
		}
		o := obs[0]
		if !strings.Contains(o.Text, "[b1] link '"+s+"'") {
			t.Fatalf("decoding lost the name %q:\n%q", s, o.Text)
		}
		if got, want := appendJSONStringContent(nil, o.Text), body[o.RawStart:o.RawEnd]; !bytes.Equal(got, want) {
			t.Fatalf("encoding the decoded page gives\n%q\nthe request had\n%q", got, want)
		}
	})
}

// Lone surrogates reach focusgate as escapes (JavaScript's JSON.stringify and
// Python's json.dumps write them so); they must leave as the same escapes.
func TestLoneSurrogateEscapesLeaveAsTheyCame(t *testing.T) {
	for _, name := range []string{`\ud83d broken emoji`, `low \udc00 alone`, `two highs \ud800\ud801`, `reversed \ude00\ud83d`, "raw \xff\xfe bytes"} {
		body := treeRequest([]byte(name))
		obs, err := detect.Find(body, focusgate.APIChat, detect.Options{})
		if err != nil || len(obs) != 1 {
			t.Fatalf("%s: %d observations, %v", name, len(obs), err)
		}
		o := obs[0]
		if got, want := appendJSONStringContent(nil, o.Text), body[o.RawStart:o.RawEnd]; !bytes.Equal(got, want) {
			t.Errorf("%s: encoded back as\n%q\nwant\n%q", name, got, want)
		}
	}
}
