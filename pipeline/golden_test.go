package pipeline_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/pipeline"
	"github.com/focusgate/focusgate/prune"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// wordRetriever plays the retriever without a model, deterministically: it
// keeps the root line and every line that shares a word of five letters or
// more with the goal.
type wordRetriever struct{}

func (wordRetriever) Select(_ context.Context, q prune.Query) (prune.Selection, error) {
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(q.Goal), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
	}) {
		if len(w) >= 5 {
			words = append(words, w)
		}
	}
	sel := prune.Selection{Ranges: []prune.Range{{From: 1, To: 1}}}
	for i, line := range strings.Split(q.Numbered, "\n") {
		line = strings.ToLower(line)
		if slices.ContainsFunc(words, func(w string) bool { return strings.Contains(line, w) }) {
			sel.Ranges = append(sel.Ranges, prune.Range{From: i + 1, To: i + 1})
		}
	}
	return sel, nil
}

// newGoldenPipeline is the gateway's pipeline with its default settings,
// the word retriever and an in-process cache, so that older pages of a
// conversation are re-applied as in production.
func newGoldenPipeline() *pipeline.Pipeline {
	return pipeline.New(goldenOptions())
}

func goldenOptions() pipeline.Options {
	pr := prune.New(prune.Config{RetrieverModel: "gpt-4.1-mini", MinTokens: 1000, UseHistory: true},
		wordRetriever{}, cache.New(cache.NewMemory(64<<20, time.Hour), nil))
	return pipeline.Options{
		Pruner:            pr,
		Finder:            detect.NewFinder(16 << 20),
		Mode:              focusgate.Remove,
		Variant:           focusgate.LineVariant,
		Budget:            time.Hour, // a busy machine must not turn a prune into a timeout
		RetrieverModel:    "gpt-4.1-mini",
		SkipUneconomic:    true,
		ExpectedReduction: 0.5,
	}
}

// conversations are the captured agent requests, one folder per
// conversation, and the GenericAgent bodies, each a conversation of one.
func conversations(t *testing.T) map[string][]string {
	t.Helper()
	convs := map[string][]string{}
	dirs, _ := filepath.Glob("../testdata/agents/*/*")
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, "*.json"))
		if len(files) > 0 {
			slices.Sort(files)
			rel, _ := filepath.Rel("../testdata", d)
			convs[rel] = files
		}
	}
	singles, _ := filepath.Glob("../testdata/requests/*.json")
	for _, f := range singles {
		convs[filepath.Join("requests", strings.TrimSuffix(filepath.Base(f), ".json"))] = []string{f}
	}
	if len(convs) < 10 {
		t.Fatalf("found %d conversations under ../testdata: the captured requests are missing", len(convs))
	}
	return convs
}

// The pipeline is specified by its bytes: every captured request of every
// conversation, run in order through one pipeline, becomes exactly the body
// in testdata/golden (older pages re-applied, everything outside the pages
// untouched), with the outcome in that conversation's outcomes.txt. Run with
// -update to rewrite them after a deliberate change, and read the diff.
func TestGoldenConversations(t *testing.T) {
	for name, files := range conversations(t) {
		t.Run(name, func(t *testing.T) {
			p := newGoldenPipeline()
			dir := filepath.Join("testdata", "golden", name)
			var outcomes strings.Builder
			for _, f := range files {
				body, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				// count_tokens bodies are sized as they came (see Request.Sizing).
				req := pipeline.Request{API: detect.APIOf(body), Body: body, Sizing: strings.Contains(filepath.Base(f), "count_tokens")}
				got, out := p.Rewrite(context.Background(), req)
				fmt.Fprintf(&outcomes, "%s: %s\n", filepath.Base(f), describe(out))
				golden := filepath.Join(dir, filepath.Base(f))
				if out.Status != focusgate.Pruned {
					// Only pruned bodies are stored: any other comes back
					// as it went in, byte for byte.
					if !bytes.Equal(got, body) {
						t.Errorf("%s: %s, yet the body changed", filepath.Base(f), describe(out))
					}
					continue
				}
				compare(t, golden, got)
			}
			compare(t, filepath.Join(dir, "outcomes.txt"), []byte(outcomes.String()))
		})
	}
}

// describe is an outcome without its timings, which vary from run to run.
func describe(o pipeline.Outcome) string {
	s := fmt.Sprintf("%s api=%s pages=%d tokens=%d->%d cache=%s", o.Status, o.API, len(o.Pages), o.TokensBefore, o.TokensAfter, o.Cache)
	if o.Reason != "" {
		s += " reason=" + string(o.Reason)
	}
	if o.Older != (pipeline.Older{}) {
		s += fmt.Sprintf(" older=%+v", o.Older)
	}
	return s
}

func compare(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./pipeline -run Golden -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Errorf("%s differs at byte %d:\ngot  %q\nwant %q", golden, i, excerpt(got, i), excerpt(want, i))
	}
}

func excerpt(b []byte, i int) []byte {
	return b[max(i-60, 0):min(i+60, len(b))]
}
