package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	sel := prune.Selection{Ranges: []focusgate.Range{{From: 1, To: 1}}}
	for i, line := range strings.Split(q.Numbered, "\n") {
		line = strings.ToLower(line)
		if slices.ContainsFunc(words, func(w string) bool { return strings.Contains(line, w) }) {
			sel.Ranges = append(sel.Ranges, focusgate.Range{From: i + 1, To: i + 1})
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
		Mode:              focusgate.ModeRemove,
		Variant:           focusgate.VariantLine,
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

// The pipeline is specified by what it keeps of each page: every captured
// request of every conversation runs in order through one pipeline, and for
// each pruned request testdata/golden holds, page by page, the text that
// went out in place of the page, line by line, so that the diff of an
// -update shows which lines a change keeps or drops; each conversation's
// outcomes.txt holds the outcome of each request. Everything outside the
// pages is not stored but checked: it must leave byte for byte as it came
// (older pages re-applied, everything around the pages untouched).
func TestGoldenConversations(t *testing.T) {
	for name, files := range conversations(t) {
		t.Run(name, func(t *testing.T) {
			p := newGoldenPipeline()
			dir := filepath.Join("testdata", "golden", name)
			var outcomes strings.Builder
			shown := map[string]string{} // a page's text as it went out -> where the golden first shows it
			for _, f := range files {
				body, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				api := detect.APIOf(body)
				base := filepath.Base(f)
				// count_tokens bodies are sized as they came (see Request.Sizing).
				got, out := p.Rewrite(context.Background(), focusgate.Request{API: api, Body: body, Sizing: strings.Contains(base, "count_tokens")})
				fmt.Fprintf(&outcomes, "%s: %s\n", base, describe(out))
				if out.Status != focusgate.StatusPruned {
					// Any other outcome sends the body as it came.
					if !bytes.Equal(got, body) {
						t.Errorf("%s: %s, yet the body changed", base, describe(out))
					}
					continue
				}
				obs, err := detect.Find(body, api, detect.Options{All: true})
				if err != nil {
					t.Fatalf("%s: %v", base, err)
				}
				pages, err := replacements(body, got, obs)
				if err != nil {
					t.Errorf("%s: %v", base, err)
					continue
				}
				golden := filepath.Join(dir, strings.TrimSuffix(base, filepath.Ext(base))+".txt")
				compare(t, golden, []byte(keptText(base, describe(out), body, obs, pages, shown)))
			}
			compare(t, filepath.Join(dir, "outcomes.txt"), []byte(outcomes.String()))
		})
	}
}

// replacements checks that out is in with at most the raw spans of the
// observations obs replaced, and returns what stands in each span in out,
// escaped as in the body.
func replacements(in, out []byte, obs []detect.Observation) ([][]byte, error) {
	reps := make([][]byte, len(obs))
	from, at := 0, 0 // in[from:] is to be found at out[at:]
	for k, o := range obs {
		if o.RawStart < from || o.RawEnd < o.RawStart {
			return nil, fmt.Errorf("page %d at bytes %d-%d overlaps the one before", k+1, o.RawStart, o.RawEnd)
		}
		between := in[from:o.RawStart]
		if !bytes.HasPrefix(out[at:], between) {
			return nil, fmt.Errorf("bytes %d-%d before page %d changed: %s", from, o.RawStart, k+1, firstDifference(out[at:], between))
		}
		start := at + len(between)
		// What follows the page's span is found after its replacement, which
		// is one JSON string's escaped text: the first place the next
		// untouched bytes appear is where the replacement ends.
		after := in[o.RawEnd:]
		end := len(out) - len(after)
		if k+1 < len(obs) {
			after = in[o.RawEnd:obs[k+1].RawStart]
			i := bytes.Index(out[start:], after)
			if i < 0 {
				return nil, fmt.Errorf("bytes %d-%d after page %d are not in the output", o.RawEnd, obs[k+1].RawStart, k+1)
			}
			end = start + i
		}
		if end < start {
			return nil, fmt.Errorf("the output is too short for the bytes after page %d", k+1)
		}
		reps[k] = out[start:end]
		from, at = o.RawEnd, end
	}
	if rest := in[from:]; !bytes.Equal(out[at:], rest) {
		return nil, fmt.Errorf("bytes %d-%d after the last page changed: %s", from, len(in), firstDifference(out[at:], rest))
	}
	return reps, nil
}

// firstDifference shows where got and want part.
func firstDifference(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	return fmt.Sprintf("at byte %d, got %q, want %q", i, excerpt(got, i), excerpt(want, i))
}

// keptText is the golden text of one pruned request: its outcome, then each
// page with what went out in its place, decoded, line by line. A page sent
// as it came says so; one that went out as an earlier request's page did
// (an older page re-applied) names that request's page.
func keptText(request, outcome string, body []byte, obs []detect.Observation, reps [][]byte, shown map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", request, outcome)
	for k, o := range obs {
		where := fmt.Sprintf("%s page %d", request, k+1)
		fmt.Fprintf(&b, "\n== page %d of %d: %s, %s, %d lines", k+1, len(obs), o.Path, o.Format, len(o.Lines))
		if o.Nested > 0 {
			fmt.Fprintf(&b, ", inside %d JSON encoding(s)", o.Nested)
		}
		text, err := decodeRaw(reps[k], o.Nested+1)
		switch {
		case bytes.Equal(reps[k], body[o.RawStart:o.RawEnd]):
			b.WriteString(": as it came\n")
			continue
		case err != nil:
			fmt.Fprintf(&b, ": replaced by text that does not decode (%v)\n%s\n", err, reps[k])
			continue
		}
		if first, ok := shown[text]; ok {
			fmt.Fprintf(&b, ": %d lines, as %s\n", strings.Count(text, "\n")+1, first)
			continue
		}
		shown[text] = where
		fmt.Fprintf(&b, ": %d lines\n%s\n", strings.Count(text, "\n")+1, text)
	}
	return b.String()
}

// decodeRaw decodes the escaped content of a JSON string times times over.
func decodeRaw(raw []byte, times int) (string, error) {
	s := string(raw)
	for range times {
		if err := json.Unmarshal([]byte(`"`+s+`"`), &s); err != nil {
			return "", err
		}
	}
	return s, nil
}

// describe is an outcome without its timings, which vary from run to run.
func describe(o focusgate.Outcome) string {
	s := fmt.Sprintf("%s api=%s pages=%d tokens=%d->%d cache=%s", o.Status, o.API, len(o.Pages), o.TokensBefore, o.TokensAfter, o.Cache)
	if o.Reason != "" {
		s += " reason=" + string(o.Reason)
	}
	if o.Older != (focusgate.Older{}) {
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
		gotLines, wantLines := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		i := 0
		for i < len(gotLines) && i < len(wantLines) && gotLines[i] == wantLines[i] {
			i++
		}
		line := func(l []string) string {
			if i < len(l) {
				return l[i]
			}
			return "(end of file)"
		}
		t.Errorf("%s differs from line %d (run with -update and read the diff):\ngot  %q\nwant %q", golden, i+1, line(gotLines), line(wantLines))
	}
}

func excerpt(b []byte, i int) []byte {
	return b[max(i-60, 0):min(i+60, len(b))]
}

// The golden test stores only what stands in each page's span: everything
// else must be the input's own bytes, which replacements checks.
func TestReplacementsCheckEveryByteOutsideThePages(t *testing.T) {
	in := []byte(`{"a":"PAGE1","b":"x PAGE2 y","c":1}`)
	span := func(s string) detect.Observation {
		i := bytes.Index(in, []byte(s))
		return detect.Observation{RawStart: i, RawEnd: i + len(s)}
	}
	obs := []detect.Observation{span("PAGE1"), span("PAGE2")}
	for _, tt := range []struct {
		name, out string
		want      []string // the replacements; nil for an error
	}{
		{"pages replaced", `{"a":"p1","b":"x p\"2\" y","c":1}`, []string{"p1", `p\"2\"`}},
		{"pages as they came", string(in), []string{"PAGE1", "PAGE2"}},
		{"a page emptied", `{"a":"","b":"x p2 y","c":1}`, []string{"", "p2"}},
		{"a byte before the pages", `{"A":"p1","b":"x p2 y","c":1}`, nil},
		{"a byte between the pages", `{"a":"p1","B":"x p2 y","c":1}`, nil},
		{"a byte after the pages", `{"a":"p1","b":"x p2 y","c":2}`, nil},
		{"the end cut", `{"a":"p1","b":"x p2 y"`, nil},
		{"bytes added at the end", `{"a":"p1","b":"x p2 y","c":1} `, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reps, err := replacements(in, []byte(tt.out), obs)
			if tt.want == nil {
				if err == nil {
					t.Errorf("replacements = %q, want an error", reps)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, want := range tt.want {
				if string(reps[k]) != want {
					t.Errorf("page %d replaced by %q, want %q", k+1, reps[k], want)
				}
			}
		})
	}
}
