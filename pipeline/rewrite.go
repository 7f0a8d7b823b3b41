package pipeline

import (
	"context"
	"errors"
	"sync"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/pricing"
	"github.com/focusgate/focusgate/prune"
)

// plan is what the pipeline learns of a request before it waits for
// anything: its settings and its observations.
type plan struct {
	api         focusgate.API
	mode        focusgate.Mode
	variant     focusgate.Variant
	obs         []detect.Observation
	model       string
	credential  string
	actionPrice pricing.Price
	priced      bool // both the action model and the retriever have a price
}

// plan reads the request's settings and finds its observations. It returns
// false, with the outcome to report, when there is nothing to prune.
func (p *Pipeline) plan(req Request) (plan, Outcome, bool) {
	pl := plan{api: req.API, mode: p.opts.Mode, variant: p.opts.Variant, credential: req.Credential}
	if req.Mode != "" {
		m, err := focusgate.ParseMode(req.Mode)
		if err != nil {
			return pl, skipped(focusgate.BadHeader), false
		}
		pl.mode = m
	}
	if req.Prompt != "" {
		v, err := focusgate.ParseVariant(req.Prompt)
		if err != nil {
			return pl, skipped(focusgate.BadHeader), false
		}
		pl.variant = v
	}
	if pl.mode == focusgate.Off {
		return pl, skipped(focusgate.ModeOff), false
	}
	body := req.Body
	// The model is looked up only when it is needed: before detection when
	// an uneconomic request is to be skipped, otherwise once detection has
	// found something to prune, so that a request without an observation
	// (most of a gateway's traffic) is scanned once, by detection.
	looked := false
	lookUp := func() {
		if !looked {
			pl.model = detect.Model(body)
			pl.actionPrice, pl.priced = p.opts.Prices.Lookup(pl.model)
			pl.priced = pl.priced && p.retrieverPriced
			looked = true
		}
	}
	// The defender prompt is chosen for safety, not savings.
	if p.opts.SkipUneconomic && pl.variant != focusgate.Defender {
		lookUp()
		if pl.priced {
			if be, ok := pricing.BreakEven(p.retrieverPrice, pl.actionPrice); ok && be >= p.opts.ExpectedReduction {
				return pl, skipped(focusgate.Uneconomic), false
			}
		}
	}

	// Every observation is found: the newest is pruned, and each older one
	// is forwarded as it was when it was the newest, so that the provider's
	// prefix cache keeps hitting from one request of a conversation to the
	// next.
	obs, err := p.opts.Finder.Find(body, req.API, detect.Options{All: true})
	if errors.Is(err, detect.ErrNotJSON) {
		return pl, skipped(focusgate.NotJSON), false
	}
	if err != nil || len(obs) == 0 {
		return pl, skipped(focusgate.NoObservation), false
	}
	pl.obs = obs
	lookUp()
	return pl, Outcome{}, true
}

// rewrite has the observations of a plan pruned and splices the results
// into the original bytes. Whatever it cannot handle leaves body as it is.
func (p *Pipeline) rewrite(ctx context.Context, body []byte, pl plan) ([]byte, Outcome) {
	obs := pl.obs
	pages := make([]Page, len(obs))
	var wg sync.WaitGroup
	newest := len(obs) - 1
	for i, o := range obs {
		pages[i].Observation = o
		in := prune.Input{
			Tree:    prune.NewTree(o.Text, o.Format, o.Lines, o.FocusedBID),
			Goal:    o.Goal,
			History: o.History,
			Mode:    pl.mode,
			Variant: pl.variant,
			Model:   pl.model,
			APIKey:  pl.credential,
		}
		wg.Go(func() {
			// A panic here would end the process, not just this request.
			defer func() {
				if v := recover(); v != nil {
					p.logPanic(ctx, v)
					pages[i].Result = prune.Result{Text: o.Text, Status: focusgate.FailedOpen, Reason: focusgate.InternalError}
				}
			}()
			if i == newest || p.opts.PruneAll {
				pages[i].Result = p.opts.Pruner.Prune(ctx, in)
			} else {
				pages[i].Result = p.opts.Pruner.Reapply(ctx, in)
			}
		})
	}
	wg.Wait()

	out := Outcome{Model: pl.model, Mode: pl.mode, Variant: pl.variant, Pages: pages}
	// The newest observation is folded in first, so that a request with
	// nothing pruned reports the newest's reason.
	out.add(pages[newest].Result)
	for _, pg := range pages[:newest] {
		out.addOlder(pg.Result)
	}
	var edits []edit
	for _, pg := range pages {
		if pg.Result.Status == focusgate.Pruned {
			o := pg.Observation
			edits = append(edits, edit{start: o.RawStart, end: o.RawEnd, text: pg.Result.Text, nested: o.Nested})
		}
	}
	if pl.priced {
		out.Priced = true
		out.SavedUSD = pl.actionPrice.Cost(out.TokensBefore-out.TokensAfter, 0)
		out.RetrieverUSD = p.retrieverPrice.Cost(out.Usage.PromptTokens, out.Usage.CompletionTokens)
	}
	if len(edits) == 0 {
		return body, out
	}
	return splice(body, edits), out
}
