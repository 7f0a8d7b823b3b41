package prune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loaded returns the gateway's own encoding or stops the test.
func loaded(t testing.TB, name string) *bpe {
	t.Helper()
	b, err := encodings[name]()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkCount compares the gateway's count of text with tiktoken-go's in both
// encodings.
func checkCount(t *testing.T, what, text string) {
	t.Helper()
	for _, name := range []string{o200k, cl100k} {
		if got, want := loaded(t, name).count(text), len(encoding(t, name).EncodeOrdinary(text)); got != want {
			t.Errorf("%s, %s: %d tokens, tiktoken-go %d", what, name, got, want)
		}
	}
}

func TestBPEMatchesTiktoken(t *testing.T) {
	for _, tt := range []struct{ name, text string }{
		{"empty", ""},
		{"one byte", "a"},
		{"contractions in any case", "It's they'RE we'Ve I'M you'LL he'd 'S"},
		{"numbers", "1 12 123 1234 12345 3.14159 -42 1e10 ٣٤٥"},
		{"whitespace runs", "a  b\t\tc \n\n  \r\n d      \n\t\t\t\n"},
		{"trailing spaces", "end   "},
		{"punctuation and slashes", "https://example.com/a/b?c=d&e=f#g // comment\n/// doc\n"},
		{"accents and combining marks", "café naïve e\u0301 Ångström ﬁne"},
		{"CJK", "日本語のテキストと中文文本，还有한국어 텍스트。"},
		{"emoji", "👍🏽 family 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵"},
		{"invalid UTF-8", "a\xff\xfeb\xc3(\xe2\x82 end"},
		{"lone surrogate escape decoded", "x\xed\xa0\x80y"},
		{"a long word", strings.Repeat("antidisestablishmentarianism", 40)},
		{"a long run of one byte", strings.Repeat("=", 3000)},
		{"tree lines", "RootWebArea 'Catalog', focused\n\t[a12] link 'Home', url='https://x.test/'\n\t\tStaticText '$1,299.00'\n"},
		{"special token text is ordinary", "<|endoftext|> <|fim_prefix|>"},
	} {
		checkCount(t, tt.name, tt.text)
	}
}

func TestBPEMatchesTiktokenOnRecordedTexts(t *testing.T) {
	var files []string
	for _, pattern := range []string{"../testdata/axtrees/*.txt", "../testdata/requests/*.json", "../testdata/agents/*/*/01-*.json"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 20 {
		t.Fatalf("only %d recorded texts", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checkCount(t, f, string(b))
	}
}

func FuzzBPEMatchesTiktoken(f *testing.F) {
	for _, s := range []string{"", "hello world", "\t[a1] link 'x'\n", "日本 👍🏽 \xff", "   \n\n\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		checkCount(t, "fuzzed text", text)
	})
}

func TestBPETablesAreCompact(t *testing.T) {
	b := loaded(t, o200k)
	if len(b.ends) < 199_000 || len(b.ends) != len(b.ranks) {
		t.Fatalf("o200k_base has %d tokens and %d ranks", len(b.ends), len(b.ranks))
	}
	var held int
	for _, n := range []int{cap(b.data), cap(b.ends) * 4, cap(b.ranks) * 4, cap(b.slots) * 4} {
		held += n
	}
	if held > 16<<20 {
		t.Errorf("o200k_base holds %d bytes", held)
	}
}
