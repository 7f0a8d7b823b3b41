package proxy

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
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
