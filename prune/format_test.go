package prune_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/prune"
)

// TestApplyOnEveryFormat runs post-processing on the trees that detection
// finds in real and realistic prompts of every supported agent, so that the
// stub and marker lines of each format are checked on the lines detection
// actually produces.
func TestApplyOnEveryFormat(t *testing.T) {
	type sample struct {
		name string
		tree prune.Tree
	}
	var samples []sample
	add := func(name, text string, b detect.Block) {
		samples = append(samples, sample{name, prune.NewTree(text, b.Format, b.Lines, b.FocusedBID)})
	}
	requests, _ := filepath.Glob("../detect/testdata/requests/*.json")
	more, _ := filepath.Glob("../testdata/requests/*.json")
	for _, f := range append(requests, more...) {
		body := readBytes(t, f)
		obs, err := detect.Find(body, detect.APIOf(body), detect.Options{})
		if err != nil || len(obs) == 0 {
			t.Fatalf("%s: no observation (%v)", f, err)
		}
		o := obs[len(obs)-1]
		add(filepath.Base(f), o.Text, o.Block)
	}
	trees, _ := filepath.Glob("../testdata/axtrees/*.txt")
	fixtures, _ := filepath.Glob("../detect/testdata/formats/*.txt")
	for _, f := range append(trees, fixtures...) {
		if strings.HasSuffix(f, ".golden.txt") {
			continue
		}
		text := string(readBytes(t, f))
		for _, b := range detect.Blocks(text) {
			add(filepath.Base(f), text[b.Start:b.End], b)
		}
	}

	seen := map[prune.Syntax]bool{}
	for _, s := range samples {
		tree := s.tree
		seen[tree.Format] = true
		// Keep every fourth line.
		var sel prune.Selection
		for i := 1; i <= len(tree.Lines); i += 4 {
			sel.Ranges = append(sel.Ranges, focusgate.Range{From: i, To: i})
		}
		for _, mode := range []focusgate.Mode{focusgate.ModeRemove, focusgate.ModeAncestors, focusgate.ModeStubs} {
			t.Run(s.name+"/"+string(mode), func(t *testing.T) {
				out, err := prune.Apply(tree, sel, mode)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range sel.Ranges {
					l := tree.Lines[r.From-1]
					if !strings.Contains(out, tree.Text[l.Start:l.End]) {
						t.Errorf("kept line %d is not verbatim in the output", r.From)
					}
				}
				if mode == focusgate.ModeRemove && len(out) >= len(tree.Text) {
					t.Errorf("output is not smaller: %d >= %d bytes", len(out), len(tree.Text))
				}
				// Stubs keep one line per element; a pruned element whose name
				// runs over several lines becomes one stub line.
				want := strings.Count(tree.Text, "\n")
				for i, l := range tree.Lines {
					if i%4 == 0 {
						continue // kept verbatim
					}
					want -= strings.Count(tree.Text[l.Start:l.End], "\n")
				}
				if got := strings.Count(out, "\n"); mode == focusgate.ModeStubs && got != want {
					t.Errorf("stubs mode wrote %d line breaks, want %d (one line per element)", got, want)
				}
				if testing.Verbose() {
					t.Logf("%s:\n%s", tree.Format, firstLines(out, 12))
				}
			})
		}
	}
	for _, f := range detect.Formats() {
		if !seen[f] {
			t.Errorf("no request of format %s was tried", f)
		}
	}
}

func readBytes(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
