package detect

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestGutterLen(t *testing.T) {
	for line, want := range map[string]int{
		"12\t- button":        3,
		"     1\t\t[a1] link": 7,
		"    12→- button":     9,
		"1. first item":       0,
		"12: - button":        4,
		"00012| - button":     7,
		"12:":                 3,
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

// Lines count as a file read only when they are numbered one after the
// other; a numbered list or a log whose numbers do not follow, or one bare
// line, ends a run. A run too short to hold a tree is no view, unless it
// holds an escaped text.
func TestGutterRuns(t *testing.T) {
	tree := strings.Repeat("- button \"Save\" [ref=e2]\n", 12)
	var read, mixed, repeated strings.Builder
	for i, line := range strings.Split(strings.TrimSuffix(tree, "\n"), "\n") {
		fmt.Fprintf(&read, "%4d\t%s\n", i+1, line)
		if i%3 == 0 {
			mixed.WriteString("note: " + line + "\n")
		} else {
			fmt.Fprintf(&mixed, "%d\t%s\n", i+1, line)
		}
		repeated.WriteString("1\t" + line + "\n")
	}
	for _, tt := range []struct {
		name  string
		s     string
		lines []int
	}{
		{"a numbered read", read.String(), []int{12}},
		{"a read after an envelope and before a reminder", "<path>/tmp/p</path><type>file</type><content>" + read.String() + "<system-reminder>x</system-reminder>", []int{12}},
		{"a tree", tree, nil},
		{"a third of the lines bare", mixed.String(), nil},
		{"numbers that do not follow", repeated.String(), nil},
		{"too short", "1\ta\n2\tb\n3\tc", nil},
		{"a numbered list", strings.Repeat("1. do this [ref=e2]\n", 12), nil},
		{"one line holding an escaped page", "1: [\"" + strings.Repeat(`- b [ref=e2]\n`, 8) + "\"]", []int{1}},
	} {
		views, _ := peelGutters(tt.s)
		var lines []int
		for _, v := range views {
			lines = append(lines, strings.Count(v.text, "\n")+1)
		}
		if !slices.Equal(lines, tt.lines) {
			t.Errorf("%s: views of %v lines, want %v", tt.name, lines, tt.lines)
		}
	}
}

// Whatever the text, a tree found through its gutters lies inside it, each
// line starting at its number and going back exactly.
func FuzzNumberedBlocks(f *testing.F) {
	f.Add("1\t- generic [ref=e1]:\n2\t  - button \"A\" [ref=e2]\n3\t  - button \"B\" [ref=e3]\n4\t  - button \"C\" [ref=e4]\n5\t  - link \"D\" [ref=e5]\n6\t  - link \"E\" [ref=e6]\n7\t  - link \"F\" [ref=e7]\n8\t  - link \"G\" [ref=e8]")
	f.Fuzz(func(t *testing.T, s string) {
		checkWrapped(t, "", s, nil)
	})
}

// agent-browser's snapshots, as the real CLI (0.41.2) printed them, are read
// by the playwright format with every ref, comma-separated attributes
// included ([checked=false, ref=e15]); its content markers stay outside the
// tree; its diff snapshots hold no tree.
func TestAgentBrowserCaptures(t *testing.T) {
	ref := regexp.MustCompile(`ref=([a-z0-9]+)`)
	for _, name := range []string{"snap.txt", "snap-i.txt", "snap-cb.txt"} {
		text := readFile(t, "testdata/captures/agent-browser-0.41.2/"+name)
		blocks := Blocks(text)
		if len(blocks) != 1 || blocks[0].Format != Playwright {
			t.Fatalf("%s: %d trees, want one playwright tree", name, len(blocks))
		}
		b := blocks[0]
		tree := text[b.Start:b.End]
		for _, l := range b.Lines {
			line := tree[l.Start:l.End]
			if m := ref.FindStringSubmatch(line); m != nil && l.BID != m[1] {
				t.Errorf("%s: %q read with id %q, want %q", name, line, l.BID, m[1])
			}
		}
		if strings.Contains(tree, "AGENT_BROWSER_PAGE_CONTENT") {
			t.Errorf("%s: a content marker is inside the tree", name)
		}
	}
	if b := Blocks(readFile(t, "testdata/captures/agent-browser-0.41.2/diff.txt")); len(b) != 0 {
		t.Errorf("a diff snapshot was read as %d trees", len(b))
	}
}

// An incremental snapshot (Playwright MCP 0.0.51 to 0.0.68) names unchanged
// elements by their ref alone; they are elements of the tree, and their
// stub is the ref again.
func TestPlaywrightIncrementalSnapshots(t *testing.T) {
	s := "- generic [ref=e1]:\n  - ref=e2 [unchanged]\n  - ref=e3 [unchanged]\n  - ref=e4 [unchanged]\n  - button \"Save\" [ref=e5]\n  - ref=e6 [unchanged]\n  - textbox \"Name\" [ref=e7]\n  - ref=e8 [unchanged]\n  - ref=e9 [unchanged]\n  - link \"Help\" [ref=e10]"
	b := Blocks(s)
	if len(b) != 1 || len(b[0].Lines) != 10 {
		t.Fatalf("%d trees: want one of 10 lines", len(b))
	}
	if l := b[0].Lines[1]; l.BID != "e2" || l.Role != "" || l.Depth != 1 {
		t.Errorf("unchanged line read as %+v", l)
	}
	if got := Playwright.Stub("  - ref=e2 [unchanged]", "e2", ""); got != "  - ref=e2 [unchanged]" {
		t.Errorf("stub %q", got)
	}
}
