package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/pricing"
	"github.com/focusgate/focusgate/prune"
)

// Pruner prunes one observation; *prune.Pruner is the implementation. It
// never fails: a Result that is not Pruned carries the original text.
type Pruner interface {
	Prune(ctx context.Context, in prune.Input) prune.Result
	// Reapply prunes an older observation with the selection stored for it
	// when it was the newest, without asking the retriever, so that it is
	// forwarded byte-identical to that earlier request.
	Reapply(ctx context.Context, in prune.Input) prune.Result
}

// outcome is what focusgate did to one request, summed over the
// observations it considered. It feeds the response headers, the log line
// and the metrics.
type outcome struct {
	Status       prune.Status
	Reason       string
	Model        string // the action model named in the request
	Mode         prune.Mode
	Variant      prune.Variant
	Observations int
	TokensBefore int
	TokensAfter  int
	Cache        cache.Outcome
	Retriever    time.Duration // longest wait for a selection (observations are pruned in parallel)
	Flagged      int
	Usage        prune.Usage          // retriever tokens spent for this request
	Results      []prune.Result       // one per observation considered
	Older        olderCounts          // what happened to the observations before the newest
	found        []detect.Observation // what Results are about, for the dashboard

	// Priced is set when both models have a price: SavedUSD is the
	// action-model input the pruning avoided, RetrieverUSD what this
	// request's retriever calls cost (zero on a cache hit).
	Priced       bool
	SavedUSD     float64
	RetrieverUSD float64
}

// olderCounts counts the observations of a request that are not its newest,
// by what happened to them.
type olderCounts struct {
	Reapplied int // pruned again with the selection stored when each was the newest
	Pruned    int // pruned with a new selection (FOCUSGATE_PRUNE_ALL)
	Left      int // forwarded as they came: no selection known, or none that paid
}

func skipped(reason string) outcome {
	return outcome{Status: prune.Skipped, Reason: reason}
}

// plan is what focusgate learns of a request before it waits for anything:
// its settings and its observations.
type plan struct {
	mode        prune.Mode
	variant     prune.Variant
	obs         []detect.Observation
	model       string
	apiKey      string
	actionPrice pricing.Price
	priced      bool // both the action model and the retriever have a price
}

// plan reads the request's settings and finds its observations. It returns
// false, with the outcome to report, when there is nothing to prune.
func (s *Server) plan(kind detect.API, body []byte, h http.Header) (plan, outcome, bool) {
	p := plan{mode: s.opts.Mode, variant: s.opts.Variant}
	if v := h.Get(HeaderMode); v != "" {
		m, err := prune.ParseMode(v)
		if err != nil {
			return p, skipped("bad-header"), false
		}
		p.mode = m
	}
	if v := h.Get(HeaderPrompt); v != "" {
		pv, err := prune.ParseVariant(v)
		if err != nil {
			return p, skipped("bad-header"), false
		}
		p.variant = pv
	}
	if p.mode == prune.Off {
		return p, skipped("mode-off"), false
	}
	// The model is looked up only when it is needed: before detection when
	// an uneconomic request is to be skipped, otherwise once detection has
	// found something to prune, so that a request without an observation
	// (most of a gateway's traffic) is scanned once, by detection.
	looked := false
	lookUp := func() {
		if !looked {
			p.model = detect.Model(body)
			p.actionPrice, p.priced = s.prices.Lookup(p.model)
			p.priced = p.priced && s.retrieverPriced
			looked = true
		}
	}
	// The defender prompt is chosen for safety, not savings.
	if s.opts.SkipUneconomic && p.variant != prune.Defender {
		lookUp()
		if p.priced {
			if be, ok := pricing.BreakEven(s.retrieverPrice, p.actionPrice); ok && be >= s.opts.ExpectedReduction {
				return p, skipped("uneconomic"), false
			}
		}
	}

	// Every observation is found: the newest is pruned, and each older one
	// is forwarded as it was when it was the newest, so that the provider's
	// prefix cache keeps hitting from one request of a conversation to the
	// next.
	obs, err := s.opts.Finder.Find(body, kind, detect.Options{All: true})
	if errors.Is(err, detect.ErrNotJSON) {
		return p, skipped("not-json"), false
	}
	if err != nil || len(obs) == 0 {
		return p, skipped("no-observation"), false
	}
	p.obs = obs
	lookUp()
	p.apiKey, _ = strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	return p, outcome{}, true
}

// rewrite has the observations of a plan pruned and splices the results
// into the original bytes. Whatever it cannot handle leaves body as it is.
func (s *Server) rewrite(ctx context.Context, body []byte, p plan) ([]byte, outcome) {
	obs := p.obs
	results := make([]prune.Result, len(obs))
	var wg sync.WaitGroup
	newest := len(obs) - 1
	for i, o := range obs {
		in := prune.Input{
			Tree:    prune.NewTree(o.Text, o.Format, o.Lines, o.FocusedBID),
			Goal:    o.Goal,
			History: o.History,
			Mode:    p.mode,
			Variant: p.variant,
			Model:   p.model,
			APIKey:  p.apiKey,
		}
		wg.Go(func() {
			// A panic here would end the process, not just this request.
			defer func() {
				if v := recover(); v != nil {
					s.logPanic(ctx, v)
					results[i] = prune.Result{Text: o.Text, Status: prune.FailedOpen, Reason: "internal-error"}
				}
			}()
			if i == newest || s.opts.PruneAll {
				results[i] = s.opts.Pruner.Prune(ctx, in)
			} else {
				results[i] = s.opts.Pruner.Reapply(ctx, in)
			}
		})
	}
	wg.Wait()

	out := outcome{Model: p.model, Mode: p.mode, Variant: p.variant, Observations: len(obs), Results: results, found: obs}
	// The newest observation is folded in first, so that a request with
	// nothing pruned reports the newest's reason.
	out.add(results[newest])
	for _, r := range results[:newest] {
		out.addOlder(r)
	}
	var edits []edit
	for i, r := range results {
		if r.Status == prune.Pruned {
			edits = append(edits, edit{start: obs[i].RawStart, end: obs[i].RawEnd, text: r.Text, nested: obs[i].Nested})
		}
	}
	if p.priced {
		out.Priced = true
		out.SavedUSD = p.actionPrice.Cost(out.TokensBefore-out.TokensAfter, 0)
		out.RetrieverUSD = s.retrieverPrice.Cost(out.Usage.PromptTokens, out.Usage.CompletionTokens)
	}
	if len(edits) == 0 {
		return body, out
	}
	return splice(body, edits), out
}

// add folds one observation's result into the request's outcome. The
// request is as pruned as its most pruned observation (pruned, then
// failed-open, then skipped, each with the first reason met), and as
// uncached as its least cached one (miss, then shared, then hit).
func (o *outcome) add(r prune.Result) {
	if statusRank[r.Status] > statusRank[o.Status] {
		o.Status, o.Reason = r.Status, r.Reason
	}
	if cacheRank[r.Cache] > cacheRank[o.Cache] {
		o.Cache = r.Cache
	}
	o.TokensBefore += r.TokensBefore
	o.TokensAfter += r.TokensAfter
	o.Retriever = max(o.Retriever, r.RetrieverTime)
	o.Flagged += r.Flagged
	o.Usage.PromptTokens += r.Usage.PromptTokens
	o.Usage.CompletionTokens += r.Usage.CompletionTokens
}

// addOlder folds in an observation that is not the newest and counts what
// happened to it. One re-applied from a stored selection does not hide the
// newest's failure: it turns a skipped request into a pruned one, but a
// failed-open request stays failed-open, since the newest page went out as
// it came.
func (o *outcome) addOlder(r prune.Result) {
	reapplied := r.Status == prune.Pruned && r.Cache == cache.Hit
	switch {
	case reapplied && o.Status == prune.FailedOpen:
		r.Status, r.Reason = prune.Skipped, ""
	case reapplied && o.Status != prune.Pruned:
		r.Reason = ""
	}
	o.add(r)
	switch {
	case reapplied:
		o.Older.Reapplied++
	case r.Status == prune.Pruned:
		o.Older.Pruned++
	case r.Reason != "below-min-tokens":
		o.Older.Left++
	}
}

var (
	statusRank = map[prune.Status]int{prune.Skipped: 1, prune.FailedOpen: 2, prune.Pruned: 3}
	cacheRank  = map[cache.Outcome]int{cache.Hit: 1, cache.Shared: 2, cache.Miss: 3}
)

// logAttrs describes the outcome for the request's log line.
func (o outcome) logAttrs() []slog.Attr {
	attrs := []slog.Attr{
		slog.String("status", string(o.Status)),
		slog.String("model", o.Model),
		slog.String("mode", string(o.Mode)),
		slog.String("prompt", string(o.Variant)),
		slog.Int("observations", o.Observations),
		slog.Int("tokens_before", o.TokensBefore),
		slog.Int("tokens_after", o.TokensAfter),
		slog.String("cache", string(o.Cache)),
		slog.Int64("retriever_ms", o.Retriever.Milliseconds()),
	}
	if o.TokensBefore > 0 {
		attrs = append(attrs, slog.Float64("reduction", 1-float64(o.TokensAfter)/float64(o.TokensBefore)))
	}
	if o.Reason != "" {
		attrs = append(attrs, slog.String("reason", o.Reason))
	}
	if o.Flagged > 0 {
		attrs = append(attrs, slog.Int("flagged_lines", o.Flagged))
	}
	if o.Older != (olderCounts{}) {
		attrs = append(attrs, slog.Int("older_reapplied", o.Older.Reapplied), slog.Int("older_left", o.Older.Left))
		if o.Older.Pruned > 0 {
			attrs = append(attrs, slog.Int("older_pruned", o.Older.Pruned))
		}
	}
	if o.Priced {
		attrs = append(attrs, slog.Float64("saved_usd", o.SavedUSD-o.RetrieverUSD))
	}
	return attrs
}
