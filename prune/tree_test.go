package prune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
)

// browserGymTree builds a Tree from tab-indented BrowserGym text: one Line
// per non-blank physical line, Depth the leading tabs, BID the "[x]" prefix,
// Role the next word. The real grammar lives in package detect; these tests
// need only this much of it.
func browserGymTree(text string) Tree {
	t := Tree{Text: text, Format: detect.BrowserGym}
	for start := 0; start < len(text); {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		if line := text[start:end]; strings.TrimSpace(line) != "" {
			body := strings.TrimLeft(line, "\t")
			l := focusgate.Line{Start: start, End: end, Depth: len(line) - len(body)}
			if rest, ok := strings.CutPrefix(body, "["); ok {
				if bid, after, ok := strings.Cut(rest, "] "); ok {
					l.BID, body = bid, after
				}
			}
			role, _, _ := strings.Cut(body, " ")
			l.Role = strings.TrimSuffix(role, ",")
			t.Lines = append(t.Lines, l)
		}
		start = end + 1
	}
	return t
}

// readTree reads one of the project's real trees.
func readTree(t testing.TB, name string) Tree {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "axtrees", name))
	if err != nil {
		t.Fatal(err)
	}
	return browserGymTree(string(b))
}

// lineText returns the text of line i (0-based) of t.
func lineText(t Tree, i int) string { return t.Text[t.Lines[i].Start:t.Lines[i].End] }

func TestNumber(t *testing.T) {
	tests := []struct {
		name string
		tree Tree
		want string
	}{
		{
			name: "right-aligned numbers, indentation kept",
			tree: browserGymTree("RootWebArea 'Shop'\n\t[12] link 'Home'\n\t\tStaticText 'Home'\n"),
			want: "   1 RootWebArea 'Shop'\n   2 \t[12] link 'Home'\n   3 \t\tStaticText 'Home'",
		},
		{
			name: "continuation line gets padding, not a number",
			tree: Tree{
				Format: detect.BrowserGym,
				Text:   "RootWebArea 'a'\n\t[3] textbox 'line one\nline two'\n\t[4] button 'OK'",
				Lines:  []focusgate.Line{{Start: 0, End: 15}, {Start: 16, End: 48, Depth: 1}, {Start: 49, End: 65, Depth: 1}},
			},
			want: "   1 RootWebArea 'a'\n   2 \t[3] textbox 'line one\n     line two'\n   3 \t[4] button 'OK'",
		},
		{
			name: "text outside lines is not numbered",
			tree: Tree{
				Format: detect.BrowserGym,
				Text:   "Tab 0 (current): Shop\n\n[1] RootWebArea 'Shop'\n\t[2] link 'Home'\n",
				Lines:  []focusgate.Line{{Start: 23, End: 45}, {Start: 46, End: 62, Depth: 1}},
			},
			want: "   1 [1] RootWebArea 'Shop'\n   2 \t[2] link 'Home'",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := validate(tt.tree); err != nil {
				t.Fatalf("test tree invalid: %v", err)
			}
			if got := Number(tt.tree); got != tt.want {
				t.Errorf("Number() =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestNumberWideTree(t *testing.T) {
	var b strings.Builder
	b.WriteString("RootWebArea 'big'\n")
	for range 10010 {
		b.WriteString("\tStaticText 'x'\n")
	}
	got := strings.Split(Number(browserGymTree(b.String())), "\n")
	if len(got) != 10011 {
		t.Fatalf("got %d numbered lines, want 10011", len(got))
	}
	if want := "9999 \tStaticText 'x'"; got[9998] != want {
		t.Errorf("line 9999 = %q, want %q", got[9998], want)
	}
	if want := "10000 \tStaticText 'x'"; got[9999] != want {
		t.Errorf("line 10000 = %q, want %q", got[9999], want)
	}
}

func TestValidate(t *testing.T) {
	text := "RootWebArea 'a'\n\t[1] link 'b'"
	tests := []struct {
		name  string
		lines []focusgate.Line
		ok    bool
	}{
		{"valid", []focusgate.Line{{Start: 0, End: 15}, {Start: 16, End: 29, Depth: 1}}, true},
		{"no lines", nil, false},
		{"end past text", []focusgate.Line{{Start: 0, End: 15}, {Start: 16, End: 30}}, false},
		{"negative start", []focusgate.Line{{Start: -1, End: 15}}, false},
		{"reversed offsets", []focusgate.Line{{Start: 15, End: 0}}, false},
		{"overlapping lines", []focusgate.Line{{Start: 0, End: 15}, {Start: 10, End: 29}}, false},
		{"out of order", []focusgate.Line{{Start: 16, End: 29}, {Start: 0, End: 15}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validate(Tree{Text: text, Format: detect.BrowserGym, Lines: tt.lines})
			if (err == nil) != tt.ok {
				t.Errorf("validate() error = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		in   string
		want focusgate.Mode
		ok   bool
	}{
		{"", focusgate.ModeRemove, true},
		{"remove", focusgate.ModeRemove, true},
		{" Ancestors ", focusgate.ModeAncestors, true},
		{"STUBS", focusgate.ModeStubs, true},
		{"off", focusgate.ModeOff, true},
		{"keep", "", false},
	}
	for _, tt := range tests {
		got, err := focusgate.ParseMode(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseMode(%q) = %q, %v; want %q, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseVariant(t *testing.T) {
	tests := []struct {
		in   string
		want focusgate.Variant
		ok   bool
	}{
		{"", focusgate.VariantLine, true},
		{"line", focusgate.VariantLine, true},
		{"Restrictive", focusgate.VariantRestrictive, true},
		{"neutral", focusgate.VariantNeutral, true},
		{" defender", focusgate.VariantDefender, true},
		{"paranoid", "", false},
	}
	for _, tt := range tests {
		got, err := focusgate.ParseVariant(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseVariant(%q) = %q, %v; want %q, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
