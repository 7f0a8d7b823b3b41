package prune

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
)

// retrieverFunc lets a test script a selection without a server.
type retrieverFunc func(context.Context, Query) (Selection, error)

func (f retrieverFunc) Select(ctx context.Context, q Query) (Selection, error) { return f(ctx, q) }

// mapCache is a minimal in-memory Cache that counts computations.
type mapCache struct {
	mu       sync.Mutex
	m        map[string][]byte
	computes int
}

func (c *mapCache) Fetch(ctx context.Context, key string, compute func(context.Context) ([]byte, error)) ([]byte, focusgate.CacheOutcome, error) {
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return v, focusgate.CacheHit, nil
	}
	v, err := compute(ctx)
	if err != nil {
		return nil, focusgate.CacheMiss, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string][]byte{}
	}
	c.m[key] = v
	c.computes++
	return v, focusgate.CacheMiss, nil
}

// LookupHeld answers as Lookup does: the map is this process's memory.
func (c *mapCache) LookupHeld(key string) ([]byte, error) {
	return c.Lookup(context.Background(), key)
}

func (c *mapCache) Lookup(_ context.Context, key string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[key]; ok {
		return v, nil
	}
	return nil, cache.ErrNotFound
}

// laptopInput is a real observation with a goal, pruned by default.
func laptopInput(t *testing.T) Input {
	tree := readTree(t, "bgym-pr301_workarena_standard_laptop_form.txt")
	tree.FocusedBID = "a230"
	return Input{
		Tree:  tree,
		Goal:  "Order 10 Standard Laptops with Adobe Acrobat",
		Model: "gpt-4.1",
	}
}

const laptopAnswer = "<answer>[(61,61), (133,147), (161,171), (182,185)]</answer>"

func TestPrunePrunesWithScriptedRetriever(t *testing.T) {
	srv := newChatServer(t, reply{content: laptopAnswer})
	p := New(Config{RetrieverModel: "gpt-4.1-mini", MinTokens: 1000},
		chatRetriever(RetrieverConfig{BaseURL: srv.url, Model: "gpt-4.1-mini"}), nil)
	in := laptopInput(t)
	res := p.Prune(context.Background(), in)

	if res.Status != focusgate.StatusPruned || res.Reason != "" {
		t.Fatalf("Status = %s (%s), want pruned", res.Status, res.Reason)
	}
	sel, err := ParseAnswer(laptopAnswer, len(in.Tree.Lines))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Apply(in.Tree, sel, focusgate.ModeRemove)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != want {
		t.Errorf("Text is not the Remove rendering of the scripted answer:\n%s", res.Text)
	}
	if res.TokensBefore < 1000 || res.TokensAfter >= res.TokensBefore {
		t.Errorf("tokens %d -> %d, want a reduction from at least 1000", res.TokensBefore, res.TokensAfter)
	}
	if res.Cache != focusgate.CacheMiss || res.RetrieverTime <= 0 {
		t.Errorf("Cache = %q, RetrieverTime = %v; want a miss that took time", res.Cache, res.RetrieverTime)
	}
	if want := (focusgate.RetrieverUsage{PromptTokens: 1000, CompletionTokens: 50}); res.Usage != want {
		t.Errorf("Usage = %+v, want %+v", res.Usage, want)
	}
	if user := srv.received()[0].body.Messages[1].Content; !strings.Contains(user, in.Goal) || !strings.Contains(user, Number(in.Tree)) {
		t.Error("retriever did not get the goal and the numbered tree")
	}
}

func TestPruneFailsOpen(t *testing.T) {
	refused := httptest.NewServer(http.NotFoundHandler())
	refusedURL := refused.URL
	refused.Close()

	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name    string
		replies []reply
		url     string // overrides the fake server
		ctx     context.Context
		reason  focusgate.Reason
	}{
		{name: "timeout", replies: []reply{{hang: true}}, reason: "timeout"},
		{name: "client gave up", replies: []reply{{hang: true}}, ctx: canceled, reason: "canceled"},
		{name: "connection refused", url: refusedURL, reason: "retriever-error"},
		{name: "rate limited", replies: []reply{{status: http.StatusTooManyRequests}}, reason: "retriever-http-4xx"},
		{name: "unauthorized", replies: []reply{{status: http.StatusUnauthorized}}, reason: "retriever-http-4xx"},
		{name: "server error", replies: []reply{{status: http.StatusInternalServerError}}, reason: "retriever-http-5xx"},
		{name: "garbage answer", replies: []reply{{content: "I am sorry, I cannot see the page."}}, reason: "bad-answer"},
		{name: "out-of-range answer", replies: []reply{{content: "<answer>[(5000,6000)]</answer>"}}, reason: "bad-answer"},
		{name: "empty answer", replies: []reply{{content: ""}}, reason: "bad-answer"},
		{name: "empty list", replies: []reply{{content: "<answer>[]</answer>"}}, reason: "bad-answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.url
			if url == "" {
				url = newChatServer(t, tt.replies...).url
			}
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			// Only the hanging retriever may reach the deadline: a busy
			// machine must not turn the other cases into timeouts.
			timeout := time.Minute
			if tt.reason == "timeout" {
				timeout = 200 * time.Millisecond
			}
			r := chatRetriever(RetrieverConfig{BaseURL: url, Model: "gpt-4.1-mini", Timeout: timeout})
			in := laptopInput(t)
			res := New(Config{MinTokens: 1000}, r, &mapCache{}).Prune(ctx, in)
			if res.Status != focusgate.StatusFailedOpen || res.Reason != tt.reason {
				t.Errorf("Status = %s, Reason = %q; want failed-open, %q", res.Status, res.Reason, tt.reason)
			}
			if res.Text != in.Tree.Text {
				t.Error("Text is not the original")
			}
			if res.TokensBefore == 0 || res.TokensAfter != res.TokensBefore {
				t.Errorf("tokens %d -> %d, want the original count twice", res.TokensBefore, res.TokensAfter)
			}
			// An answer that could not be used was paid for, twice with
			// the re-ask: the dashboard and the metrics count it.
			if tt.reason == focusgate.ReasonBadAnswer && res.Usage != (focusgate.RetrieverUsage{PromptTokens: 2000, CompletionTokens: 100}) {
				t.Errorf("usage %+v, want both calls' (2000 prompt, 100 completion tokens)", res.Usage)
			}
		})
	}
}

func TestPruneSkips(t *testing.T) {
	tests := []struct {
		name      string
		mode      focusgate.Mode
		minTokens int
		answer    string
		reason    focusgate.Reason
		asked     bool
		text      string // the tree; the laptop form when empty
	}{
		{name: "mode off", mode: focusgate.ModeOff, reason: "mode-off"},
		{name: "small observation", minTokens: 1 << 20, reason: "below-min-tokens"},
		{name: "selection keeps everything", answer: "<answer>[(1,199)]</answer>", reason: "no-gain", asked: true},
		{name: "stubs longer than the lines they replace", mode: focusgate.ModeStubs, answer: "<answer>[(1,1)]</answer>", reason: "no-gain", asked: true,
			text: "RootWebArea 'Hi'\n" + strings.Repeat("\tStaticText 'a'\n", 50)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked := false
			r := retrieverFunc(func(_ context.Context, q Query) (Selection, error) {
				asked = true
				return ParseAnswer(tt.answer, q.Lines)
			})
			in := laptopInput(t)
			if tt.text != "" {
				in.Tree = browserGymTree(tt.text)
			}
			in.Mode = tt.mode
			res := New(Config{MinTokens: tt.minTokens}, r, nil).Prune(context.Background(), in)
			if res.Status != focusgate.StatusSkipped || res.Reason != tt.reason {
				t.Errorf("Status = %s, Reason = %q; want skipped, %q", res.Status, res.Reason, tt.reason)
			}
			if res.Text != in.Tree.Text || res.TokensAfter != res.TokensBefore {
				t.Error("skipped observation changed")
			}
			if asked != tt.asked {
				t.Errorf("retriever asked = %v, want %v", asked, tt.asked)
			}
		})
	}
}

func TestPruneRefusesBadInput(t *testing.T) {
	never := retrieverFunc(func(context.Context, Query) (Selection, error) {
		return Selection{}, errors.New("the retriever must not be asked")
	})
	good := laptopInput(t)
	tests := []struct {
		name   string
		edit   func(*Input)
		reason focusgate.Reason
	}{
		{"unknown mode", func(in *Input) { in.Mode = "shuffle" }, "bad-input"},
		{"unknown variant", func(in *Input) { in.Variant = "paranoid" }, "bad-input"},
		{"lines outside the text", func(in *Input) {
			in.Tree.Lines = append([]focusgate.Line(nil), in.Tree.Lines...)
			in.Tree.Lines[3].End = len(in.Tree.Text) + 10
		}, "postprocess-error"},
		{"no lines", func(in *Input) { in.Tree.Lines = nil }, "postprocess-error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := good
			tt.edit(&in)
			res := New(Config{}, never, nil).Prune(context.Background(), in)
			if res.Status != focusgate.StatusFailedOpen || res.Reason != tt.reason || res.Text != in.Tree.Text {
				t.Errorf("Status = %s, Reason = %q; want failed-open, %q, original text", res.Status, res.Reason, tt.reason)
			}
		})
	}
}

func TestPruneSurvivesPanickingRetriever(t *testing.T) {
	r := retrieverFunc(func(context.Context, Query) (Selection, error) { panic("boom") })
	in := laptopInput(t)
	res := New(Config{}, r, nil).Prune(context.Background(), in)
	if res.Status != focusgate.StatusFailedOpen || res.Reason != "internal-error" || res.Text != in.Tree.Text {
		t.Errorf("Status = %s, Reason = %q; want failed-open, internal-error, original text", res.Status, res.Reason)
	}
}

func TestPruneCachesSelections(t *testing.T) {
	calls := 0
	r := retrieverFunc(func(_ context.Context, q Query) (Selection, error) {
		calls++
		sel, err := ParseAnswer(laptopAnswer, q.Lines)
		sel.Usage = focusgate.RetrieverUsage{PromptTokens: 3000, CompletionTokens: 40}
		return sel, err
	})
	c := &mapCache{}
	p := New(Config{RetrieverModel: "gpt-4.1-mini"}, r, c)
	ctx := context.Background()

	first := laptopInput(t)
	first.Credential = clientBearer("key-one")
	res := p.Prune(ctx, first)
	if res.Status != focusgate.StatusPruned || res.Cache != focusgate.CacheMiss || res.Usage.PromptTokens != 3000 {
		t.Fatalf("first: %s %q cache=%q usage=%+v; want a pruned miss with usage", res.Status, res.Reason, res.Cache, res.Usage)
	}

	// Another client key and another mode reuse the cached selection.
	again := first
	again.Credential = clientBearer("key-two")
	again.Mode = focusgate.ModeAncestors
	res = p.Prune(ctx, again)
	if res.Status != focusgate.StatusPruned || res.Cache != focusgate.CacheHit || res.RetrieverTime != 0 || res.Usage != (focusgate.RetrieverUsage{}) {
		t.Errorf("second: %s cache=%q time=%v usage=%+v; want a pruned hit, no time, no usage", res.Status, res.Cache, res.RetrieverTime, res.Usage)
	}
	want, _ := Apply(first.Tree, mustParse(t, laptopAnswer, len(first.Tree.Lines)), focusgate.ModeAncestors)
	if res.Text != want {
		t.Error("hit not rendered in the requested mode")
	}
	if calls != 1 {
		t.Errorf("retriever called %d times, want 1", calls)
	}

	// What the retriever sees is the key: goal and variant change it.
	for _, edit := range []func(*Input){
		func(in *Input) { in.Goal = "Order an iPad" },
		func(in *Input) { in.Variant = focusgate.VariantRestrictive },
	} {
		in := first
		edit(&in)
		if res := p.Prune(ctx, in); res.Cache != focusgate.CacheMiss {
			t.Errorf("cache = %q, want a miss for a different question", res.Cache)
		}
	}
	if calls != 3 {
		t.Errorf("retriever called %d times, want 3", calls)
	}
}

func TestPruneKeysDoNotDependOnThePageKeyMemo(t *testing.T) {
	calls := 0
	r := retrieverFunc(func(_ context.Context, q Query) (Selection, error) {
		calls++
		return ParseAnswer(laptopAnswer, q.Lines)
	})
	c := &mapCache{}
	// Replicas sharing a cache, one remembering page hashes and one not, and
	// pages of the same text in fresh memory (as each request's is).
	remembering := New(Config{RetrieverModel: "gpt-4.1-mini", PageKeyMemoBytes: 1 << 20}, r, c)
	forgetting := New(Config{RetrieverModel: "gpt-4.1-mini"}, r, c)
	ctx := context.Background()
	in := laptopInput(t)
	for i, p := range []*Pruner{remembering, remembering, forgetting, remembering} {
		in.Tree.Text = strings.Clone(in.Tree.Text)
		res := p.Prune(ctx, in)
		if want := map[bool]focusgate.CacheOutcome{true: focusgate.CacheMiss, false: focusgate.CacheHit}[i == 0]; res.Status != focusgate.StatusPruned || res.Cache != want {
			t.Fatalf("request %d: %s, cache %q; want pruned, %q", i+1, res.Status, res.Cache, want)
		}
	}
	other := in
	other.Tree.Text = strings.Replace(in.Tree.Text, "Laptop", "Desktop", 1)
	if res := remembering.Prune(ctx, other); res.Cache != focusgate.CacheMiss {
		t.Errorf("another page: cache %q, want a miss", res.Cache)
	}
	if calls != 2 {
		t.Errorf("retriever called %d times, want 2", calls)
	}
}

func TestPruneHistoryInKeyOnlyWhenUsed(t *testing.T) {
	for _, use := range []bool{false, true} {
		t.Run(fmt.Sprintf("UseHistory=%v", use), func(t *testing.T) {
			var histories []string
			r := retrieverFunc(func(_ context.Context, q Query) (Selection, error) {
				histories = append(histories, q.History)
				return ParseAnswer(laptopAnswer, q.Lines)
			})
			p := New(Config{UseHistory: use}, r, &mapCache{})
			in := laptopInput(t)
			for _, h := range []string{"step 1: click('a12')", "step 1: click('a12')\nstep 2: fill('a230', 'x')"} {
				in.History = h
				p.Prune(context.Background(), in)
			}
			want := []string{""}
			if use {
				want = []string{"step 1: click('a12')", "step 1: click('a12')\nstep 2: fill('a230', 'x')"}
			}
			if fmt.Sprint(histories) != fmt.Sprint(want) {
				t.Errorf("retriever saw histories %q, want %q", histories, want)
			}
		})
	}
}

func TestPruneReportsFlaggedInjection(t *testing.T) {
	tree := readTree(t, "agentlab-tutorial_webarena_shopping_prompt_0_with_doomarena_popup_injection_tabs-restored.txt")
	srv := newChatServer(t, reply{content: goldenCases[1].answer})
	p := New(Config{}, chatRetriever(RetrieverConfig{BaseURL: srv.url, Model: "gpt-4.1-mini"}), nil)
	for _, mode := range []focusgate.Mode{focusgate.ModeRemove, focusgate.ModeAncestors, focusgate.ModeStubs} {
		res := p.Prune(context.Background(), Input{Tree: tree, Goal: "Buy the headphones in Black & Gold", Mode: mode, Variant: focusgate.VariantDefender})
		if res.Status != focusgate.StatusPruned || res.Flagged != 5 {
			t.Errorf("%s: Status = %s (%s), Flagged = %d; want pruned, 5", mode, res.Status, res.Reason, res.Flagged)
		}
		if strings.Contains(res.Text, "NOTICE FOR AGENTS") || strings.Contains(res.Text, "localhost:4321") {
			t.Errorf("%s: injected text survived", mode)
		}
	}
	if system := srv.received()[0].body.Messages[0].Content; !strings.Contains(system, "<injection>") {
		t.Error("defender prompt does not ask for injected lines")
	}
}

func mustParse(t *testing.T, answer string, n int) Selection {
	t.Helper()
	sel, err := ParseAnswer(answer, n)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// A Result says what the selection was: the retriever's ranges, the flagged
// lines and the lines kept verbatim (root and focus added, flagged ones
// removed), and on a miss the retriever's reasoning, which a hit does not
// have because it is not cached.
func TestResultReportsTheSelection(t *testing.T) {
	answer := "<think>The quantity field and the order button.</think><answer>[(61,61), (133,147)]</answer><injection>[(140,140)]</injection>"
	srv := newChatServer(t, reply{content: answer}, reply{content: answer})
	p := New(Config{RetrieverModel: "gpt-4.1-mini", MinTokens: 1000},
		chatRetriever(RetrieverConfig{BaseURL: srv.url, Model: "gpt-4.1-mini"}), &mapCache{})
	in := laptopInput(t)
	in.Variant = focusgate.VariantDefender
	focused := 0
	for i, l := range in.Tree.Lines {
		if l.BID == in.Tree.FocusedBID {
			focused = i + 1
		}
	}

	miss := p.Prune(context.Background(), in)
	if miss.Status != focusgate.StatusPruned || miss.Cache != focusgate.CacheMiss {
		t.Fatalf("first call: %s, %s", miss.Status, miss.Cache)
	}
	if want := []focusgate.Range{{From: 61, To: 61}, {From: 133, To: 147}}; fmt.Sprint(miss.Ranges) != fmt.Sprint(want) {
		t.Errorf("Ranges = %v, want %v", miss.Ranges, want)
	}
	if fmt.Sprint(miss.FlaggedLines) != "[140]" {
		t.Errorf("FlaggedLines = %v, want [140]", miss.FlaggedLines)
	}
	want := []focusgate.Range{{From: 1, To: 1}, {From: 61, To: 61}, {From: 133, To: 139}, {From: 141, To: 147}}
	if focused != 0 && (focused < 133 || focused > 147) && focused != 61 && focused != 1 {
		want = append(want, focusgate.Range{From: focused, To: focused})
		slices.SortFunc(want, func(a, b focusgate.Range) int { return a.From - b.From })
	}
	if fmt.Sprint(miss.Kept) != fmt.Sprint(want) {
		t.Errorf("Kept = %v, want %v (focused line %d)", miss.Kept, want, focused)
	}
	if miss.Reasoning != "The quantity field and the order button." {
		t.Errorf("Reasoning = %q", miss.Reasoning)
	}

	hit := p.Prune(context.Background(), in)
	if hit.Cache != focusgate.CacheHit || hit.Reasoning != "" || fmt.Sprint(hit.Kept) != fmt.Sprint(miss.Kept) {
		t.Errorf("hit: cache %s, reasoning %q, kept %v", hit.Cache, hit.Reasoning, hit.Kept)
	}
}

// A call cut short by its context is logged as a detail: the request's own
// log line names what ended it (the deadline, the client, the shutdown),
// and a warning saying "canceled" would contradict it. Other failures are
// warnings.
func TestFailOpenLogsContextEndsAsDetails(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		warn bool
	}{
		{"context ended", context.Canceled, false},
		{"retriever down", &StatusError{Code: 503, Err: errors.New("down")}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logs strings.Builder
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			ctx, cancel := context.WithCancel(context.Background())
			r := retrieverFunc(func(context.Context, Query) (Selection, error) { cancel(); return Selection{}, tt.err })
			res := New(Config{MinTokens: 1000, Logger: log}, r, nil).Prune(ctx, laptopInput(t))
			if res.Status != focusgate.StatusFailedOpen {
				t.Fatalf("status %s", res.Status)
			}
			if got := strings.Contains(logs.String(), "level=WARN"); got != tt.warn {
				t.Errorf("warning logged: %v, want %v:\n%s", got, tt.warn, logs.String())
			}
		})
	}
}

// A page pruned again with the selection it had (an older page re-applied,
// a cache hit) comes from the memo of applied selections: the same result
// as applying it afresh, in each mode and for each tokenizer, with a miss's
// retriever usage still reported.
func TestAppliedMemoGivesWhatApplyingGives(t *testing.T) {
	usage := focusgate.RetrieverUsage{PromptTokens: 900, CompletionTokens: 20}
	r := retrieverFunc(func(_ context.Context, q Query) (Selection, error) {
		sel, err := ParseAnswer(laptopAnswer, q.Lines)
		sel.Usage = usage
		return sel, err
	})
	c := &mapCache{}
	remembering := New(Config{RetrieverModel: "gpt-4.1-mini", AppliedMemoBytes: 1 << 20}, r, c)
	forgetting := New(Config{RetrieverModel: "gpt-4.1-mini"}, r, c)
	ctx := context.Background()
	for i, tc := range []struct {
		mode  focusgate.Mode
		model string
	}{
		{focusgate.ModeRemove, "gpt-4.1"},
		{focusgate.ModeStubs, "gpt-4.1"},
		{focusgate.ModeAncestors, "gpt-4.1"},
		{focusgate.ModeRemove, "gpt-4"},
	} {
		in := laptopInput(t)
		in.Mode, in.Model = tc.mode, tc.model
		first := remembering.Prune(ctx, in)
		if i == 0 && (first.Cache != focusgate.CacheMiss || first.Usage != usage) {
			t.Errorf("%s %s, first request: cache %q usage %+v, want a miss that reports %+v", tc.mode, tc.model, first.Cache, first.Usage, usage)
		}
		want := forgetting.Reapply(ctx, in)
		if want.Status != focusgate.StatusPruned {
			t.Fatalf("%s %s: applied afresh: %s %s", tc.mode, tc.model, want.Status, want.Reason)
		}
		for _, got := range []Result{remembering.Prune(ctx, in), remembering.Reapply(ctx, in)} {
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: from the memo %s %s, %d -> %d tokens, %d bytes; applied afresh %d -> %d, %d bytes",
					tc.mode, tc.model, got.Status, got.Reason, got.TokensBefore, got.TokensAfter, len(got.Text), want.TokensBefore, want.TokensAfter, len(want.Text))
			}
		}
		if n := remembering.applieds.Len(); n != i+1 {
			t.Errorf("%s %s: %d outcomes remembered, want %d: one per mode and tokenizer", tc.mode, tc.model, n, i+1)
		}
	}
}

// What is known of a page (Tree.Known) is recorded when it is first worked
// out and taken from there afterwards: a count or a hash that differs from
// the text's own shows which was used.
func TestWhatIsKnownOfAPageIsNotWorkedOutAgain(t *testing.T) {
	calls := 0
	r := retrieverFunc(func(_ context.Context, q Query) (Selection, error) {
		calls++
		return ParseAnswer(laptopAnswer, q.Lines)
	})
	p := New(Config{RetrieverModel: "gpt-4.1-mini"}, r, &mapCache{})
	ctx := context.Background()
	in := laptopInput(t)
	in.Tree.Known = new(focusgate.Known)
	first := p.Prune(ctx, in)
	if first.Status != focusgate.StatusPruned {
		t.Fatalf("first request: %s (%s), want pruned", first.Status, first.Reason)
	}
	encoding := tokenizerOf(in.Model).encoding
	if n, ok := in.Tree.Known.Count(encoding); !ok || n != first.TokensBefore {
		t.Errorf("known count %d (%v), want the page's %d", n, ok, first.TokensBefore)
	}
	if k, ok := in.Tree.Known.Key(); !ok || k != p.textKey(in.Tree.Text) {
		t.Errorf("known key %q (%v), want the page's hash", k, ok)
	}
	if !in.Tree.Known.Sound() {
		t.Error("the page's lines are not known to be sound")
	}

	told := new(focusgate.Known)
	told.SetCount(encoding, 123456)
	told.SetKey(p.textKey(in.Tree.Text))
	told.SetSound()
	in.Tree.Known = told
	if res := p.Prune(ctx, in); res.TokensBefore != 123456 || res.Cache != focusgate.CacheHit {
		t.Errorf("with the count and key known: %d tokens before, cache %q; want the known 123456, a hit", res.TokensBefore, res.Cache)
	}
	wrongKey := new(focusgate.Known)
	wrongKey.SetKey("another page's hash")
	in.Tree.Known = wrongKey
	if res := p.Prune(ctx, in); res.Cache != focusgate.CacheMiss || calls != 2 {
		t.Errorf("with another key known: cache %q after %d calls, want a miss and a second call", res.Cache, calls)
	}
}
