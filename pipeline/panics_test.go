package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/pipeline"
	"github.com/focusgate/focusgate/prune"
)

// panickingPruner panics in Prune, at one site or another by the goal.
type panickingPruner struct{}

func (panickingPruner) Prune(_ context.Context, in prune.Input) prune.Result {
	if strings.Contains(in.Goal, "other") {
		panic("a defect at a second site")
	}
	var lines []int
	_ = lines[len(in.Goal)] // index out of range, like a detection defect
	return prune.Result{}
}

func (p panickingPruner) Reapply(ctx context.Context, in prune.Input) prune.Result {
	return p.Prune(ctx, in)
}

func (p panickingPruner) ReapplyHeld(ctx context.Context, in prune.Input) (prune.Result, bool) {
	return p.Prune(ctx, in), true
}

var _ pipeline.Pruner = panickingPruner{}

// A defect that panics on a shape of request panics on every such request:
// each goes out as it came (internal-error), and the log gets one line with
// the stack per site that panicked, not one per request.
func TestPanicIsLoggedOncePerSite(t *testing.T) {
	var logs bytes.Buffer
	opts := goldenOptions()
	opts.Pruner = panickingPruner{}
	opts.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p := pipeline.New(opts)
	page := readPage(t, "bgym-pr301_workarena_standard_laptop_form.txt")
	body := func(goal string) []byte {
		b, _ := json.Marshal(map[string]any{"model": "gpt-4.1", "messages": []any{
			map[string]any{"role": "user", "content": goal},
			map[string]any{"role": "tool", "tool_call_id": "a", "content": page},
		}})
		return b
	}
	for _, goal := range []string{"Order a laptop", "Order a laptop", "Order a laptop", "Order the other one", "Order the other one"} {
		in := body(goal)
		got, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: in})
		if out.Status != focusgate.StatusFailedOpen || out.Reason != focusgate.ReasonInternalError || !bytes.Equal(got, in) {
			t.Fatalf("%q: %s %s, body changed %v; want failed-open internal-error and the body as it came", goal, out.Status, out.Reason, !bytes.Equal(got, in))
		}
	}
	var withStack, repeats int
	sites := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec struct {
			Level, Site, Stack string
			Count              int
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		switch {
		case rec.Level == "ERROR" && rec.Stack != "":
			withStack++
			sites[rec.Site] = true
		case rec.Level == "DEBUG" && rec.Stack == "" && rec.Count > 1:
			repeats++
		default:
			t.Errorf("unexpected log line %s", line)
		}
	}
	if withStack != 2 || len(sites) != 2 || repeats != 3 {
		t.Errorf("%d lines with a stack at %d sites, %d repeats; want 2 at 2 sites and 3 repeats", withStack, len(sites), repeats)
	}
	for site := range sites {
		if !strings.Contains(site, "panickingPruner.Prune") {
			t.Errorf("site %q is not where the panic happened", site)
		}
	}
}
