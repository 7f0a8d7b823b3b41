package detect

import (
	"strings"
	"testing"
)

func TestGutterLen(t *testing.T) {
	for line, want := range map[string]int{
		"12\t- button":        3,
		"     1\t\t[a1] link": 7,
		"    12→- button":     9,
		"1. first item":       0,
		"2024-11-24 12:00":    0,
		"12 - button":         0,
		"\t12\tx":             0,
		"1234567890\tx":       0,
		"":                    0,
	} {
		if got := gutterLen(line); got != want {
			t.Errorf("gutterLen(%q) = %d, want %d", line, got, want)
		}
	}
}

// Numbered lines that are not a file read (a numbered list, a log with line
// numbers before a space) are searched as they are; a short read is too.
func TestNumberedReadNeedsAlmostEveryLine(t *testing.T) {
	tree := strings.Repeat("- button \"Save\" [ref=e2]\n", 12)
	var read, mixed strings.Builder
	for i, line := range strings.Split(strings.TrimSuffix(tree, "\n"), "\n") {
		read.WriteString(strings.Repeat(" ", 3) + string(rune('1'+i%9)) + "\t" + line + "\n")
		if i%3 == 0 {
			mixed.WriteString("note: " + line + "\n")
		} else {
			mixed.WriteString("1\t" + line + "\n")
		}
	}
	if !numberedRead(read.String(), MinLines) {
		t.Error("a numbered read not recognised")
	}
	for name, s := range map[string]string{
		"a tree":                    tree,
		"a third of the lines bare": mixed.String(),
		"too short":                 "1\ta\n2\tb\n3\tc",
		"a numbered list":           strings.Repeat("1. do this [ref=e2]\n", 12),
	} {
		if numberedRead(s, MinLines) {
			t.Errorf("%s taken for a numbered read", name)
		}
	}
}

// Whatever the text, a tree found in a numbered read lies inside it, each
// line starting at its number, which is the line's gutter.
func FuzzNumberedBlocks(f *testing.F) {
	f.Add("1\t- generic [ref=e1]:\n2\t  - button \"A\" [ref=e2]\n3\t  - button \"B\" [ref=e3]\n4\t  - button \"C\" [ref=e4]\n5\t  - link \"D\" [ref=e5]\n6\t  - link \"E\" [ref=e6]\n7\t  - link \"F\" [ref=e7]\n8\t  - link \"G\" [ref=e8]")
	f.Fuzz(func(t *testing.T, s string) {
		for _, b := range numberedBlocks(s) {
			if b.Start < 0 || b.End > len(s) || b.Start > b.End {
				t.Fatalf("block [%d,%d) outside %d bytes", b.Start, b.End, len(s))
			}
			text := s[b.Start:b.End]
			for _, l := range b.Lines {
				if l.Start < 0 || l.End > len(text) || l.Start+l.Gutter > l.End {
					t.Fatalf("line [%d,%d) gutter %d outside the block's %d bytes", l.Start, l.End, l.Gutter, len(text))
				}
				if g := gutterLen(text[l.Start:l.End]); g != l.Gutter {
					t.Fatalf("line %q: gutter %d, its number is %d bytes", text[l.Start:l.End], l.Gutter, g)
				}
			}
		}
	})
}
