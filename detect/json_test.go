package detect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/focusgate/focusgate"
)

// skipPlainRef is skipPlain a byte at a time.
func skipPlainRef(b []byte, i int) int {
	for i < len(b) && b[i] >= 0x20 && b[i] != '"' && b[i] != '\\' {
		i++
	}
	return i
}

// skipPlain reads 32 and eight bytes at a time: every byte that stops it
// must stop it in every lane, whatever its neighbours (the bytes next to it
// in value are where carries and borrows would go wrong).
func TestSkipPlainStopsWhereAByteAtATimeDoes(t *testing.T) {
	stops := []byte{0x00, 0x01, 0x1f, '"', '\\'}
	neighbours := []byte{0x20, 0x21, '!', '#', '[', ']', '^', 0x7f, 0x80, 0xa0, 0xdc, 0xdd, 0xff, 'a'}
	for _, stop := range stops {
		for _, n := range neighbours {
			for at := range 70 {
				b := make([]byte, 80)
				for k := range b {
					b[k] = n
				}
				b[at] = stop
				for from := 0; from <= at; from++ {
					if got, want := skipPlain(b, from), skipPlainRef(b, from); got != want {
						t.Fatalf("%#x at %d among %#x, from %d: %d, want %d", stop, at, n, from, got, want)
					}
				}
			}
		}
	}
}

func FuzzSkipPlain(f *testing.F) {
	f.Add([]byte(`plain text, then a quote" and more`), 0)
	f.Add([]byte(`abcdefg]\\\"`), 3)
	f.Add([]byte("\x7f\x80\x5c\x5d\x1f\x20\xff\x00abcdefghijklmnopqrstuvwxyz0123456789"), 1)
	f.Fuzz(func(t *testing.T, b []byte, from int) {
		if from < 0 || from > len(b) {
			return
		}
		if got, want := skipPlain(b, from), skipPlainRef(b, from); got != want {
			t.Fatalf("skipPlain(%q, %d) = %d, want %d", b, from, got, want)
		}
	})
}

// firstControlRef is firstControl a byte at a time.
func firstControlRef(s []byte) int {
	for k, v := range s {
		if v < 0x20 {
			return k
		}
	}
	return -1
}

// firstControl reads eight words at a time: a control byte must be found in
// every lane of every word, whatever its neighbours, and nothing else may be.
func TestFirstControlFindsWhatAByteAtATimeDoes(t *testing.T) {
	controls := []byte{0x00, 0x01, 0x0a, 0x1f}
	neighbours := []byte{0x20, 0x21, '"', '\\', 0x7f, 0x80, 0x9f, 0xa0, 0xdf, 0xe0, 0xff, 'a'}
	for _, n := range neighbours {
		b := bytes.Repeat([]byte{n}, 140)
		for from := range 8 {
			if got := firstControl(b[from:]); got != -1 {
				t.Fatalf("%#x only, from %d: %d, want -1", n, from, got)
			}
		}
		for _, c := range controls {
			for at := range len(b) {
				b[at] = c
				for _, from := range []int{0, 1, 7, at} {
					if got, want := firstControl(b[from:]), firstControlRef(b[from:]); got != want {
						t.Fatalf("%#x at %d among %#x, from %d: %d, want %d", c, at, n, from, got, want)
					}
				}
				b[at] = n
			}
		}
	}
}

// scanStringRef is scanString a byte at a time.
func scanStringRef(b []byte, i int) (literal, int, bool) {
	lit := literal{start: i + 1}
	for i++; ; {
		if i = skipPlainRef(b, i); i >= len(b) {
			return lit, i, false
		}
		switch b[i] {
		case '"':
			lit.end = i
			return lit, i + 1, true
		case '\\':
			if i+1 >= len(b) {
				return lit, i, false
			}
			switch b[i+1] {
			case '\\':
				if i+2 < len(b) && b[i+2] == 'n' {
					lit.nested++
				}
				i += 2
			case '"', '/', 'b', 'f', 'r', 't':
				i += 2
			case 'n':
				lit.newlines++
				i += 2
			case 'u':
				if i+6 > len(b) || hex4(b[i+2:i+6]) < 0 {
					return lit, i, false
				}
				if hex4(b[i+2:i+6]) == '\n' {
					lit.newlines++
				}
				i += 6
			default:
				return lit, i, false
			}
		default:
			return lit, i, false
		}
	}
}

func FuzzScanString(f *testing.F) {
	f.Add([]byte(`"plain text that runs on for more than a word, then ends"`))
	f.Add([]byte(`"- a\n- b\n\u000a\\n and an escaped \" quote, then more text" , "next"`))
	f.Add([]byte("\"a long run of text with a control byte \x01 far from its start\""))
	f.Add([]byte(`"unterminated, and long enough to be searched for its quote`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			b = append([]byte{'"'}, b...)
		}
		lit, next, err := scanString(b, 0)
		want, wantNext, ok := scanStringRef(b, 0)
		if (err == nil) != ok {
			t.Fatalf("scanString(%q): error %v, want valid %v", b, err, ok)
		}
		if ok && (lit != want || next != wantNext) {
			t.Fatalf("scanString(%q) = %+v, %d, want %+v, %d", b, lit, next, want, wantNext)
		}
		if ok && !json.Valid(b[:next]) {
			t.Fatalf("scanString(%q) took %q, which encoding/json refuses", b, b[:next])
		}
	})
}

func TestAppendEscaped(t *testing.T) {
	tests := []struct {
		in    string
		times int
		want  string
	}{
		{"plain", 1, "plain"},
		{"tab\tnew\nline\r", 1, `tab\tnew\nline\r`},
		{"\t\t\t... 7 lines pruned ...", 1, `\t\t\t... 7 lines pruned ...`},
		{strings.Repeat("\t", 70) + "deep\t\t", 1, strings.Repeat(`\t`, 70) + `deep\t\t`},
		{"\t\t" + strings.Repeat("\t", 32), 1, strings.Repeat(`\t`, 34)},
		{"\t\tx", 2, `\\t\\tx`},
		{`quote " backslash \`, 1, `quote \" backslash \\`},
		{"<b>&</b>", 1, "<b>&</b>"},
		{"\x00\x1f", 1, `\u0000\u001f`},
		{"é ✓ 😀", 1, "é ✓ 😀"},
		{"bad \xff byte", 1, "bad \xff byte"},
		{"lone \xed\xa0\x80 high, \xed\xbf\xbf low", 1, `lone \ud800 high, \udfff low`},
		{"surrogate-like \xed\x9f\xbf is U+D7FF", 1, "surrogate-like \xed\x9f\xbf is U+D7FF"},
		{"sep\u2028\u2029", 1, `sep\u2028\u2029`},
		{"as it is \"\n", 0, "as it is \"\n"},
		{"a \"q\"\n\\ \x01 \u2028", 2, `a \\\"q\\\"\\n\\\\ \\u0001 \\u2028`},
		{"\"\n", 3, `\\\\\\\"\\\\n`},
	}
	for _, tt := range tests {
		if got := string(appendEscaped(nil, tt.in, tt.times)); got != tt.want {
			t.Errorf("escape %q %d times = %s, want %s", tt.in, tt.times, got, tt.want)
		}
		checkEscapedSize(t, tt.in, tt.times, len(tt.want))
	}
}

// checkEscapedSize checks escapedSize against the length of s escaped times
// times: never more, and exact for tabs followed by plain ASCII.
func checkEscapedSize(t *testing.T, s string, times, escaped int) {
	t.Helper()
	got := escapedSize(s, times)
	rest := strings.TrimLeft(s, "\t")
	plain := times <= 0 || !strings.ContainsFunc(rest, func(r rune) bool { return r < 0x20 || r >= utf8.RuneSelf || r == '"' || r == '\\' })
	if got > escaped || plain && got != escaped {
		t.Errorf("escapedSize(%q, %d) = %d for %d bytes escaped", s, times, got, escaped)
	}
}

// Escaping is the decoder's inverse, at every depth: encoding/json reads
// the result as the text (for valid text; it replaces what is not), and
// unquote gives back every byte.
func FuzzAppendEscaped(f *testing.F) {
	for _, s := range []string{"", "a\nb", "\"\\", "\xff\xfe", "\u2028", "<&>", "\x00", "\xed\xa0\x80", "\ud7ff\U0001F600"} {
		f.Add(s, uint8(1))
	}
	f.Fuzz(func(t *testing.T, s string, times uint8) {
		n := int(times%4) + 1
		esc := appendEscaped(nil, s, n)
		checkEscapedSize(t, s, n, len(esc))
		back, lossless := string(esc), string(esc)
		for range n {
			if err := json.Unmarshal([]byte(`"`+back+`"`), &back); err != nil {
				t.Fatalf("%q escaped %d times is invalid JSON: %v", s, n, err)
			}
			lossless = unquote(lossless)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("%q escaped %d times reads back as %q", s, n, back)
		}
		if lossless != s {
			t.Fatalf("%q escaped %d times unquotes to %q", s, n, lossless)
		}
	})
}

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

// Text decoded and escaped again is the request's bytes, invalid UTF-8 and
// lone surrogates included, so that a stub or a marker made of a page's own
// words is escaped as the page was.
func FuzzKeptTextRoundTrips(f *testing.F) {
	for _, s := range []string{"Deals", "De\xffals", "\xed\xa0\x80", "\xed\xb0\x80 and \xed\xa0\xbd", "emoji 😀", "\xf0\x9f\x98", "quote \" and \\", "\x00\x1f", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsAny(s, "\n\r") {
			t.Skip("a newline makes another line")
		}
		body := treeRequest(appendEscaped(nil, s, 1))
		obs, err := Find(body, focusgate.APIChat, Options{})
		if err != nil || len(obs) != 1 {
			t.Skipf("not one observation (%d, %v)", len(obs), err)
		}
		o := obs[0]
		if !strings.Contains(o.Text, "[b1] link '"+s+"'") {
			t.Fatalf("decoding lost the name %q:\n%q", s, o.Text)
		}
		if got, want := appendEscaped(nil, o.Text, 1), body[o.RawStart:o.RawEnd]; !bytes.Equal(got, want) {
			t.Fatalf("encoding the decoded page gives\n%q\nthe request had\n%q", got, want)
		}
		checkRaw(t, body, o)
	})
}

// Lone surrogates reach focusgate as escapes (JavaScript's JSON.stringify and
// Python's json.dumps write them so); they must leave as the same escapes.
func TestLoneSurrogateEscapesLeaveAsTheyCame(t *testing.T) {
	for _, name := range []string{`\ud83d broken emoji`, `low \udc00 alone`, `two highs \ud800\ud801`, `reversed \ude00\ud83d`, "raw \xff\xfe bytes"} {
		body := treeRequest([]byte(name))
		obs, err := Find(body, focusgate.APIChat, Options{})
		if err != nil || len(obs) != 1 {
			t.Fatalf("%s: %d observations, %v", name, len(obs), err)
		}
		o := obs[0]
		if got, want := appendEscaped(nil, o.Text, 1), body[o.RawStart:o.RawEnd]; !bytes.Equal(got, want) {
			t.Errorf("%s: encoded back as\n%q\nwant\n%q", name, got, want)
		}
	}
}

func TestEnoughIDs(t *testing.T) {
	for raw, want := range map[string]bool{
		"":                      false,
		"]]]":                   false,
		"[1] [a2] [ref=e3]":     true,
		"[0-12] [aB12] [s1e3]":  true,
		"[1] [a2] [] [ ] x":     false,
		"a]b]c]":                false,
		`- link \"x\" [ref=e1]`: false,
		"- [x] a\n- [X] b\n- [#1234] c\n- [ ] d\n[docs] [v] [#5]": false,
		"[a1] [1a] [ref=e3 ]": false,
	} {
		if got := enoughIDs([]byte(raw), 3); got != want {
			t.Errorf("enoughIDs(%q, 3) = %v, want %v", raw, got, want)
		}
	}
}
