package prune

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
)

// failingLookup is a cache whose store is down for look-ups.
type failingLookup struct{ mapCache }

func (*failingLookup) Lookup(context.Context, string) ([]byte, error) {
	return nil, errors.New("redis: connection refused")
}

// An observation that was pruned as the newest comes out byte-identical when
// it is re-applied in a later request, without a retriever call; anything
// that would make the earlier output differ is either rendered the new way
// (mode) or leaves the observation as it came.
func TestReapplyRepeatsThePrunedText(t *testing.T) {
	calls := 0
	r := retrieverFunc(func(_ context.Context, q Query) (Selection, error) {
		calls++
		return ParseAnswer(laptopAnswer, q.Lines)
	})
	newest := laptopInput(t)
	newest.History = "browser_navigate({\"url\": \"https://dev.service-now.com/\"})"

	tests := []struct {
		name   string
		cache  func() Cache // nil: the cache the newest was pruned with
		edit   func(*Input)
		status focusgate.Status
		reason focusgate.Reason
		cached focusgate.CacheOutcome
		// want is the expected text given the newest's pruned text; nil
		// means the original tree.
		want func(t *testing.T, pruned string) string
	}{
		{
			name: "same input", status: focusgate.StatusPruned, cached: focusgate.CacheHit,
			want: func(_ *testing.T, pruned string) string { return pruned },
		},
		{
			name: "another client key", edit: func(in *Input) { in.Credential = clientBearer("sk-other") }, status: focusgate.StatusPruned, cached: focusgate.CacheHit,
			want: func(_ *testing.T, pruned string) string { return pruned },
		},
		{
			name: "another mode", edit: func(in *Input) { in.Mode = focusgate.ModeAncestors }, status: focusgate.StatusPruned, cached: focusgate.CacheHit,
			want: func(t *testing.T, _ string) string {
				text, err := Apply(newest.Tree, mustParse(t, laptopAnswer, len(newest.Tree.Lines)), focusgate.ModeAncestors)
				if err != nil {
					t.Fatal(err)
				}
				return text
			},
		},
		{name: "mode off", edit: func(in *Input) { in.Mode = focusgate.ModeOff }, status: focusgate.StatusSkipped, reason: "mode-off"},
		{name: "another goal", edit: func(in *Input) { in.Goal = "Order an iPad" }, status: focusgate.StatusSkipped, reason: focusgate.ReasonNotCached},
		{name: "another history", edit: func(in *Input) { in.History += "\nbrowser_click()" }, status: focusgate.StatusSkipped, reason: focusgate.ReasonNotCached},
		{name: "another prompt variant", edit: func(in *Input) { in.Variant = focusgate.VariantRestrictive }, status: focusgate.StatusSkipped, reason: focusgate.ReasonNotCached},
		{name: "cache emptied", cache: func() Cache { return &mapCache{} }, status: focusgate.StatusSkipped, reason: focusgate.ReasonNotCached},
		{name: "no cache", cache: func() Cache { return nil }, status: focusgate.StatusSkipped, reason: focusgate.ReasonNotCached},
		{name: "store down", cache: func() Cache { return &failingLookup{} }, status: focusgate.StatusSkipped, reason: focusgate.ReasonNotCached},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls = 0
			c := &mapCache{}
			cfg := Config{RetrieverModel: "gpt-4.1-mini", MinTokens: 1000, UseHistory: true}
			first := New(cfg, r, c).Prune(context.Background(), newest)
			if first.Status != focusgate.StatusPruned {
				t.Fatalf("newest: %s %q, want pruned", first.Status, first.Reason)
			}

			var later Cache = c
			if tt.cache != nil {
				later = tt.cache()
			}
			in := newest
			if tt.edit != nil {
				tt.edit(&in)
			}
			res := New(cfg, r, later).Reapply(context.Background(), in)
			// The caches here are this process's memory: what Reapply
			// finds, ReapplyHeld finds without waiting.
			if held, ok := New(cfg, r, later).ReapplyHeld(context.Background(), in); !ok || held.Text != res.Text || held.Status != res.Status || held.Reason != res.Reason || held.Cache != res.Cache {
				t.Errorf("ReapplyHeld: %s %q cache=%q, held %v; want Reapply's %s %q cache=%q", held.Status, held.Reason, held.Cache, ok, res.Status, res.Reason, res.Cache)
			}
			if res.Status != tt.status || res.Reason != tt.reason || res.Cache != tt.cached {
				t.Errorf("Reapply: %s %q cache=%q; want %s %q cache=%q", res.Status, res.Reason, res.Cache, tt.status, tt.reason, tt.cached)
			}
			want := in.Tree.Text
			if tt.want != nil {
				want = tt.want(t, first.Text)
			}
			if res.Text != want {
				t.Errorf("Reapply gave other text than expected (%d bytes, want %d)", len(res.Text), len(want))
			}
			if res.Status == focusgate.StatusPruned && tt.edit == nil && (res.TokensBefore != first.TokensBefore || res.TokensAfter != first.TokensAfter) {
				t.Errorf("tokens %d -> %d, want the newest's %d -> %d", res.TokensBefore, res.TokensAfter, first.TokensBefore, first.TokensAfter)
			}
			if res.RetrieverTime != 0 || res.Usage != (focusgate.RetrieverUsage{}) {
				t.Errorf("RetrieverTime = %v, Usage = %+v; a re-applied observation costs no retriever time", res.RetrieverTime, res.Usage)
			}
			if calls != 1 {
				t.Errorf("retriever called %d times, want 1 (for the newest only)", calls)
			}
		})
	}
}

// A Pruner remembers what applying a stored selection gave, and a selection
// stored anew under the same key (written by another replica, or repaired)
// is applied anew: the remembered outcome is of the selection, not only of
// its key.
func TestASelectionStoredAnewIsAppliedAnew(t *testing.T) {
	const otherAnswer = "<answer>[(61,61), (100,110)]</answer>"
	in := laptopInput(t)
	in.Mode = focusgate.ModeAncestors
	r := retrieverFunc(func(_ context.Context, q Query) (Selection, error) { return ParseAnswer(laptopAnswer, q.Lines) })
	c := &mapCache{}
	p := New(Config{RetrieverModel: "gpt-4.1-mini", MinTokens: 1000, AppliedMemoBytes: 1 << 20}, r, c)
	first := p.Prune(context.Background(), in)
	if first.Status != focusgate.StatusPruned {
		t.Fatalf("newest: %s %q, want pruned", first.Status, first.Reason)
	}
	if again := p.Reapply(context.Background(), in); again.Text != first.Text {
		t.Fatalf("re-applied before the selection changed: other text than the newest's")
	}

	other := mustParse(t, otherAnswer, len(in.Tree.Lines))
	raw, err := json.Marshal(other)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	if len(c.m) != 1 {
		t.Fatalf("the cache holds %d selections, want 1", len(c.m))
	}
	for k := range c.m {
		c.m[k] = raw
	}
	c.mu.Unlock()

	want, err := Apply(in.Tree, other, in.Mode)
	if err != nil {
		t.Fatal(err)
	}
	if want == first.Text {
		t.Fatal("the two selections give one text: the test cannot tell them apart")
	}
	for name, res := range map[string]Result{
		"Reapply": p.Reapply(context.Background(), in),
		"Prune":   p.Prune(context.Background(), in),
	} {
		if res.Status != focusgate.StatusPruned || res.Cache != focusgate.CacheHit {
			t.Errorf("%s: %s %q cache=%q, want pruned from the cache", name, res.Status, res.Reason, res.Cache)
		}
		if res.Text != want {
			t.Errorf("%s gave the text of the selection stored before (%d bytes), want the new one's (%d bytes)", name, len(res.Text), len(want))
		}
	}
}

// farCache holds its values in a store elsewhere, as Redis does for the
// selections its in-process front does not hold: a look-up waits on the
// network.
type farCache struct {
	countingLookups
}

func (*farCache) LookupHeld(string) ([]byte, error) { return nil, cache.ErrNotHeld }

// ReapplyHeld does nothing when the selection is not held in this process,
// and leaves the look-up that waits to Reapply.
func TestReapplyHeldLeavesTheWaitToReapply(t *testing.T) {
	in := laptopInput(t)
	r := retrieverFunc(func(_ context.Context, q Query) (Selection, error) { return ParseAnswer(laptopAnswer, q.Lines) })
	far := &farCache{}
	cfg := Config{RetrieverModel: "gpt-4.1-mini", MinTokens: 1000}
	p := New(cfg, r, far)
	if first := p.Prune(context.Background(), in); first.Status != focusgate.StatusPruned {
		t.Fatalf("newest: %s %q, want pruned", first.Status, first.Reason)
	}
	if res, held := p.ReapplyHeld(context.Background(), in); held || far.lookups != 0 {
		t.Errorf("ReapplyHeld: %s %q, held %v after %d look-ups; want not held, and no look-up that waits", res.Status, res.Reason, held, far.lookups)
	}
	if res := p.Reapply(context.Background(), in); res.Status != focusgate.StatusPruned || res.Cache != focusgate.CacheHit || far.lookups != 1 {
		t.Errorf("Reapply: %s %q cache=%q after %d look-ups; want pruned from one look-up", res.Status, res.Reason, res.Cache, far.lookups)
	}
}

// A selection that did not pay when the page was the newest does not pay
// later either: the page is forwarded as it came both times.
func TestReapplyKeepsTheGainCheck(t *testing.T) {
	in := laptopInput(t)
	all := fmt.Sprintf("<answer>[(1,%d)]</answer>", len(in.Tree.Lines))
	r := retrieverFunc(func(_ context.Context, q Query) (Selection, error) { return ParseAnswer(all, q.Lines) })
	p := New(Config{MinTokens: 1000}, r, &mapCache{})
	if res := p.Prune(context.Background(), in); res.Status != focusgate.StatusSkipped || res.Reason != "no-gain" {
		t.Fatalf("newest: %s %q, want skipped no-gain", res.Status, res.Reason)
	}
	res := p.Reapply(context.Background(), in)
	if res.Status != focusgate.StatusSkipped || res.Reason != "no-gain" || res.Text != in.Tree.Text || res.Cache != focusgate.CacheHit {
		t.Errorf("Reapply: %s %q cache=%q; want skipped no-gain from a hit, original text", res.Status, res.Reason, res.Cache)
	}
}

// Small pages are never looked up, as they were never pruned.
func TestReapplySkipsSmallPages(t *testing.T) {
	c := &countingLookups{}
	in := laptopInput(t)
	res := New(Config{MinTokens: 1 << 20}, nil, c).Reapply(context.Background(), in)
	if res.Status != focusgate.StatusSkipped || res.Reason != "below-min-tokens" || c.lookups != 0 {
		t.Errorf("Reapply: %s %q after %d look-ups; want below-min-tokens without a look-up", res.Status, res.Reason, c.lookups)
	}
}

type countingLookups struct {
	mapCache
	lookups int
}

func (c *countingLookups) Lookup(ctx context.Context, key string) ([]byte, error) {
	c.lookups++
	return c.mapCache.Lookup(ctx, key)
}
