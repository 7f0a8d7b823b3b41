package pipeline_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/bench/workload"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/pipeline"
	"github.com/focusgate/focusgate/pricing"
	"github.com/focusgate/focusgate/prune"
)

// countingRetriever is the word retriever, counting its calls, or failing
// every call when fail is set.
type countingRetriever struct {
	calls atomic.Int32
	fail  bool
}

func (r *countingRetriever) Select(ctx context.Context, q prune.Query) (prune.Selection, error) {
	r.calls.Add(1)
	if r.fail {
		return prune.Selection{}, errors.New("retriever down")
	}
	sel, err := wordRetriever{}.Select(ctx, q)
	sel.Usage = focusgate.RetrieverUsage{PromptTokens: 100, CompletionTokens: 10}
	return sel, err
}

func rescuePipeline(r prune.Retriever, windows *pricing.Windows) *pipeline.Pipeline {
	opts := goldenOptions()
	opts.Pruner = prune.New(prune.Config{RetrieverModel: "gpt-4.1-mini", MinTokens: 1000, UseHistory: true},
		r, cache.New(cache.NewMemory(64<<20, time.Hour), nil))
	opts.Finder = detect.NewFinder(16 << 20)
	opts.Windows = windows
	return pipeline.New(opts)
}

// A conversation whose older pages have no stored selection (it began before
// the gateway) is sent whole but for its newest page; rescued, every page is
// pruned, each by a retriever call of its own, and the next request of the
// conversation forwards those pages byte-identical without asking again.
func TestRescuePrunesEveryPageAndTheConversationGoesOn(t *testing.T) {
	pages := []string{
		readPage(t, "bgym-pr301_workarena_standard_laptop_form.txt"),
		readPage(t, "bgym-pr301_workarena_ipad_pro_form.txt"),
		readPage(t, "bgym-pr301_workarena_catalog.txt"),
		readPage(t, "bgym-pr301_workarena_order_status.txt"),
	}
	steps := func(n int) [][2]string {
		var s [][2]string
		for _, pg := range pages[:n] {
			s = append(s, [2]string{"snapshot", pg})
		}
		return s
	}
	r := &countingRetriever{}
	p := rescuePipeline(r, nil)
	body := workload.ToolLoop("gpt-4.1", steps(3)...)
	ctx := context.Background()

	_, out := p.Rewrite(ctx, focusgate.Request{API: focusgate.APIChat, Body: body})
	if out.Status != focusgate.StatusPruned || out.Older.Left != 2 || out.Rescue != "" {
		t.Fatalf("first send: %s %s, older %+v, rescue %q: want the newest pruned, two older pages left whole", out.Status, out.Reason, out.Older, out.Rescue)
	}
	if n := r.calls.Load(); n != 1 {
		t.Fatalf("retriever calls before the rescue: %d, want 1", n)
	}

	rescued, out := p.Rewrite(ctx, focusgate.Request{API: focusgate.APIChat, Body: body, Rescue: true})
	if out.Rescue != focusgate.RescueRescued || out.RescuedEarly || out.Status != focusgate.StatusPruned {
		t.Fatalf("rescue: %s %s rescue=%q early=%v, want pruned and rescued", out.Status, out.Reason, out.Rescue, out.RescuedEarly)
	}
	results := toolResults(t, rescued)
	for i, pg := range pages[:3] {
		if out.Pages[i].Status != focusgate.StatusPruned || results[i] == pg || len(results[i]) >= len(pg) {
			t.Errorf("page %d: %s %s, forwarded %d of %d bytes: want every page pruned", i, out.Pages[i].Status, out.Pages[i].Reason, len(results[i]), len(pg))
		}
	}
	if n := r.calls.Load(); n != 3 {
		t.Errorf("retriever calls after the rescue: %d, want 3 (the two older pages asked, the newest found stored)", n)
	}

	next, out := p.Rewrite(ctx, focusgate.Request{API: focusgate.APIChat, Body: workload.ToolLoop("gpt-4.1", steps(4)...)})
	if out.Older.Reapplied != 3 || out.Rescue != "" {
		t.Errorf("next request: older %+v rescue %q, want the three rescued pages re-applied", out.Older, out.Rescue)
	}
	if n := r.calls.Load(); n != 4 {
		t.Errorf("retriever calls after the next request: %d, want 4 (its new page only)", n)
	}
	assertSamePrefix(t, rescued, next)
}

// A page the retriever cannot serve during a rescue goes out as stubs (the
// whole page is what was refused), and that is not stored: the next request
// asks again.
func TestRescueStubsPagesTheRetrieverCannotServe(t *testing.T) {
	page := readPage(t, "bgym-pr301_workarena_standard_laptop_form.txt")
	r := &countingRetriever{fail: true}
	p := rescuePipeline(r, nil)
	body := workload.ToolLoop("gpt-4.1", [2]string{"snapshot", page})

	sent, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: body})
	if out.Status != focusgate.StatusFailedOpen || string(sent) != string(body) {
		t.Fatalf("without rescue: %s %s, want failed-open with the body as it came", out.Status, out.Reason)
	}
	rescued, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: body, Rescue: true})
	if out.Rescue != focusgate.RescueRescued || out.Status != focusgate.StatusPruned {
		t.Fatalf("rescue: %s %s rescue=%q, want pruned as stubs", out.Status, out.Reason, out.Rescue)
	}
	if got := out.Pages[0].Reason; got != focusgate.ReasonRetrieverError {
		t.Errorf("stubbed page's reason %q, want the retriever's failure kept", got)
	}
	stubs := toolResults(t, rescued)[0]
	if strings.Count(stubs, "\n") != strings.Count(page, "\n") || !strings.Contains(stubs, "RootWebArea") {
		t.Errorf("stubbed page has %d lines (the page %d) or lost its root:\n%.400s", strings.Count(stubs, "\n"), strings.Count(page, "\n"), stubs)
	}
	calls := r.calls.Load()
	p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: body, Rescue: true})
	if r.calls.Load() == calls {
		t.Error("a stubbed page was stored: the next rescue did not ask the retriever again")
	}
}

// A request estimated over its model's context window is rescued before it
// is sent; one that fits, a model with no known window and a sizing request
// are not; an embedded image counts as an image, not as its base64 text.
func TestRescueBeforeTheWindowIsExceeded(t *testing.T) {
	laptop := readPage(t, "bgym-pr301_workarena_standard_laptop_form.txt")
	ipad := readPage(t, "bgym-pr301_workarena_ipad_pro_form.txt")
	loop := func(model string) []byte {
		return workload.ToolLoop(model, [2]string{"snapshot", laptop}, [2]string{"snapshot", ipad})
	}
	img, _ := json.Marshal("data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("\x89PNG pixels ", 300_000))))
	withImage := func(body []byte) []byte {
		// The image rides in the system message, outside every page.
		return []byte(strings.Replace(string(body), `"You drive a web browser with tools."`, string(img), 1))
	}
	windows, err := pricing.DefaultWindows().Override([]byte(`{"small-model": 2000, "image-model": 10000}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		body   []byte
		sizing bool
		want   focusgate.Rescue
	}{
		{"over its window", loop("small-model"), false, focusgate.RescueRescued},
		{"within its window", loop("gpt-4.1"), false, ""},
		{"no known window", loop("my-own-model"), false, ""},
		{"a sizing request", loop("small-model"), true, ""},
		{"an image is not its base64", withImage(loop("image-model")), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := rescuePipeline(&countingRetriever{}, windows)
			_, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: tt.body, Sizing: tt.sizing})
			if out.Rescue != tt.want || out.RescuedEarly != (tt.want != "") {
				t.Fatalf("rescue %q early=%v (%s %s), want %q", out.Rescue, out.RescuedEarly, out.Status, out.Reason, tt.want)
			}
			if tt.want == focusgate.RescueRescued && (out.Older.Pruned != 1 || out.Usage.PromptTokens != 200) {
				t.Errorf("older %+v usage %+v: want the older page pruned, and two retriever calls counted (the first pass's and the older page's)", out.Older, out.Usage)
			}
		})
	}
}
