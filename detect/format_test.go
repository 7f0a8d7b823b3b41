package detect

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const formatFixtures = "testdata/formats"

// TestFormatFixtures holds every registered format to its fixture: a real page
// as the tool printed it, in which exactly one tree of exactly that format is
// found, with the lines its golden file lists. A format without a fixture
// fails, and so does a fixture without a format.
func TestFormatFixtures(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range registry {
		t.Run(string(f.name), func(t *testing.T) {
			if f.fixture == "" {
				t.Fatalf("format %s has no fixture in %s", f.name, formatFixtures)
			}
			seen[f.fixture] = true
			text := readFile(t, filepath.Join(formatFixtures, f.fixture))
			blocks := Blocks(text)
			if len(blocks) != 1 {
				t.Fatalf("found %d trees, want 1", len(blocks))
			}
			b := blocks[0]
			if b.Format != f.name {
				t.Fatalf("detected as %s", b.Format)
			}
			checkLines(t, b, text[b.Start:b.End])
			got := describeBlock(text, b)
			golden := filepath.Join(formatFixtures, strings.TrimSuffix(f.fixture, ".txt")+".golden.txt")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if want := readFile(t, golden); got != want {
				t.Errorf("lines differ from %s (run with -update to accept):\n%s", golden, got)
			}
		})
	}
	files, err := filepath.Glob(filepath.Join(formatFixtures, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		if name := filepath.Base(file); !strings.HasSuffix(name, ".golden.txt") && !seen[name] {
			t.Errorf("%s is the fixture of no registered format", file)
		}
	}
}

// describeBlock writes what a golden file records of a tree: its format, where
// it starts and ends, its focused element, and for every line its depth, id,
// role and first physical line.
func describeBlock(text string, b Block) string {
	var sb strings.Builder
	tree := text[b.Start:b.End]
	fmt.Fprintf(&sb, "format %s, %d lines, focused %q\n", b.Format, len(b.Lines), b.FocusedBID)
	fmt.Fprintf(&sb, "first %q\nlast  %q\n", firstLine(tree), lastLine(tree))
	for _, l := range b.Lines {
		line := tree[l.Start:l.End]
		first, _, more := strings.Cut(line, "\n")
		if more {
			first += fmt.Sprintf(" (+%d lines)", strings.Count(line, "\n"))
		}
		fmt.Fprintf(&sb, "%d\t%s\t%s\t%s\n", l.Depth, l.BID, l.Role, strings.TrimLeft(first, " \t"))
	}
	return sb.String()
}

// TestFormatsRegistry checks the registry itself: names are unique, every
// format can write its stubs, and Formats lists them all.
func TestFormatsRegistry(t *testing.T) {
	names := Formats()
	if len(names) != len(registry) {
		t.Fatalf("Formats() lists %d of %d formats", len(names), len(registry))
	}
	for i, f := range names {
		if slices.Contains(names[:i], f) {
			t.Errorf("format %s is registered twice", f)
		}
		s := f.spec()
		if s == &unknownFormat || s.stub == nil || s.marker == nil {
			t.Errorf("format %s has no stub or marker syntax", f)
		}
	}
	if got := Format("no-such-format").Stub("\t[3] link 'x'", "3", "link"); got != "\t[3] link" {
		t.Errorf("an unknown format writes stubs as %q, want BrowserGym's", got)
	}
}
