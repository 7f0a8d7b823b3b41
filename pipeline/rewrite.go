package pipeline

import (
	"context"
	"errors"
	"path"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/internal/budget"
	"github.com/focusgate/focusgate/pricing"
	"github.com/focusgate/focusgate/prune"
)

// tracer makes the pipeline's spans; it is OpenTelemetry's global one, a
// no-op unless the gateway exports traces.
var tracer = otel.Tracer("github.com/focusgate/focusgate/pipeline")

// plan is what the pipeline learns of a request before it waits for
// anything: its settings and its observations.
type plan struct {
	api         focusgate.API
	retrieval   retrieval
	mode        focusgate.Mode
	variant     focusgate.Variant
	obs         []detect.Observation
	model       string
	credential  focusgate.ClientCredential
	vars        focusgate.Vars
	actionPrice focusgate.Price
	priced      bool // both the action model and the retriever have a price
	rescue      bool // every page is pruned: see Request.Rescue
	sizing      bool
}

// plan reads the request's settings and finds its observations, holding
// what detection needs on tab. It returns false, with the outcome to report,
// when there is nothing to prune.
func (p *Pipeline) plan(ctx context.Context, req focusgate.Request, tab *budget.Tab) (plan, focusgate.Outcome, bool) {
	pl := plan{api: req.API, retrieval: p.retrievalFor(req), mode: p.opts.Mode, variant: p.opts.Variant,
		rescue: req.Rescue && !req.Sizing, sizing: req.Sizing, vars: req.Vars}
	if req.Holdout {
		return pl, p.heldOut(req, tab), false
	}
	if pl.retrieval.ClientKey {
		pl.credential = req.Credential
	}
	// A request skipped before detection reads its model is reported with
	// the model its path names, else the one its body names first or last
	// (detect.QuickModel), which costs a short scan.
	quickModel := func(out focusgate.Outcome) focusgate.Outcome {
		out.Model = req.Model
		if out.Model == "" {
			out.Model = modelOf(req, detect.QuickModel(req.Body))
		}
		return out
	}
	if req.Mode != "" {
		m, err := focusgate.ParseMode(req.Mode)
		if err != nil {
			return pl, quickModel(skipped(focusgate.ReasonBadHeader)), false
		}
		pl.mode = m
	}
	if req.Prompt != "" {
		v, err := focusgate.ParseVariant(req.Prompt)
		if err != nil {
			return pl, quickModel(skipped(focusgate.ReasonBadHeader)), false
		}
		pl.variant = v
	}
	if pl.mode == focusgate.ModeOff {
		return pl, quickModel(skipped(focusgate.ReasonModeOff)), false
	}
	body := req.Body
	// The model decides whether the request is pruned at all (a bypassed or
	// uneconomic model is not). When those checks are on, a look at the
	// body's leading members decides before detection, so that skipped
	// requests skip it too; a skip is confirmed against the model as the
	// upstream reads it (the last of duplicate members). Detection reads
	// that model in its own walk, and the checks run after it when the look
	// found no model (it came too late in the body) or another one.
	// A model the path names (Gemini's) is the model, whatever the body says.
	looked := false // the checks ran on the model the look found
	if p.modelChecks(pl) {
		first := req.Model
		if first == "" {
			first = modelOf(req, detect.LeadingModel(body))
		}
		if looked = first != ""; looked {
			if reason, skip := p.skipModel(&pl, first); skip {
				if req.Model != "" || modelOf(req, detect.Model(body)) == pl.model {
					out := skipped(reason)
					out.Model = pl.model
					return pl, out, false
				}
			}
		}
	}

	// A body that cannot hold a page is not parsed: its first model is
	// reported, as for the skips above.
	if !detect.MayHoldPage(body) {
		return pl, quickModel(skipped(focusgate.ReasonNoObservation)), false
	}

	// Every observation is found: the newest is pruned, and each older one
	// is forwarded as it was when it was the newest, so that the provider's
	// prefix cache keeps hitting from one request of a conversation to the
	// next.
	_, span := tracer.Start(ctx, "focusgate.detect", trace.WithAttributes(
		attribute.String("focusgate.api", req.API.String()), attribute.Int("focusgate.body_bytes", len(body))))
	read, err := p.opts.Finder.Read(body, req.API, detect.Options{All: true, Reserve: tab.Acquire})
	obs := read.Observations
	span.SetAttributes(attribute.Int("focusgate.observations", len(obs)))
	span.End()
	if errors.Is(err, detect.ErrNotJSON) {
		return pl, skipped(focusgate.ReasonNotJSON), false
	}
	if errors.Is(err, detect.ErrOverBudget) {
		return pl, skipped(focusgate.ReasonBusy), false
	}
	if err != nil || len(obs) == 0 {
		out := skipped(focusgate.ReasonNoObservation)
		out.Model = modelOf(req, read.Model)
		return pl, out, false
	}
	if obs[len(obs)-1].Goal == "" || req.Sizing && read.Messages <= 1 {
		// Without a goal the retriever cannot tell what matters; a lone
		// message sized by count_tokens is one tool output, whose own
		// headings (Playwright MCP's "### Page") are no goal either, and
		// neither is a system prompt sized with it.
		out := skipped(focusgate.ReasonNoGoal)
		out.Model = modelOf(req, read.Model)
		return pl, out, false
	}

	model := modelOf(req, read.Model)
	if !looked || model != pl.model {
		if reason, skip := p.skipModel(&pl, model); skip {
			out := skipped(reason)
			out.Model = model
			return pl, out, false
		}
	}
	pl.obs = obs
	return pl, focusgate.Outcome{}, true
}

// heldOut reads a held-out request for the comparison of the arms, without
// pruning anything: its model, and whether its newest page repeats the page
// before it, as rewrite tells for a pruned one.
func (p *Pipeline) heldOut(req focusgate.Request, tab *budget.Tab) focusgate.Outcome {
	out := skipped(focusgate.ReasonHoldout)
	// A nil Finder remembers nothing: no page of a held-out conversation
	// is kept, not even in the memory of pages seen. So every page it
	// looks at is searched anew, and it looks only at the newest two.
	var forgetful *detect.Finder
	read, err := forgetful.Read(req.Body, req.API, detect.Options{Newest: 2, Reserve: tab.Acquire})
	if err != nil {
		return out
	}
	out.Model = modelOf(req, read.Model)
	if obs := read.Observations; len(obs) > 1 {
		out.Repeated = obs[len(obs)-1].Text == obs[len(obs)-2].Text
	}
	return out
}

// modelOf is the action model of req, whose body names bodyModel: the model
// its path names, else the body's, as its provider names it (Azure's
// deployments, through req.Aliases).
func modelOf(req focusgate.Request, bodyModel string) string {
	if req.Model != "" {
		return req.Model
	}
	if m, ok := req.Aliases[bodyModel]; ok {
		return m
	}
	return bodyModel
}

// modelChecks says whether a model can keep a request from being pruned:
// bypass patterns are set, or uneconomic models are skipped (never for the
// defender prompt, chosen for safety, not savings).
func (p *Pipeline) modelChecks(pl plan) bool {
	return len(p.opts.BypassModels) > 0 || p.economics(pl)
}

// economics says whether the economics gate applies to a request: never for
// the defender prompt, chosen for safety, not savings, nor for a rescue,
// where the alternative to pruning is a refused request.
func (p *Pipeline) economics(pl plan) bool {
	return p.opts.SkipUneconomic && pl.variant != focusgate.VariantDefender && !pl.rescue
}

// skipModel records model and its price in pl and says whether the request
// goes out unpruned because of it, and why.
func (p *Pipeline) skipModel(pl *plan, model string) (focusgate.Reason, bool) {
	pl.model = model
	pl.actionPrice, pl.priced = p.opts.Prices.Lookup(model)
	pl.priced = pl.priced && pl.retrieval.priced
	if len(p.opts.BypassModels) > 0 && p.bypassed(model) {
		// Older pages are left as they came too: a conversation with such
		// a model was never pruned, or must now go whole.
		return focusgate.ReasonBypassModel, true
	}
	if p.economics(*pl) && pl.priced {
		if be, ok := pricing.BreakEven(pl.retrieval.price, pl.actionPrice); ok && be >= p.opts.ExpectedReduction {
			return focusgate.ReasonUneconomic, true
		}
	}
	return "", false
}

// rewrite has the observations of a plan pruned and splices the results
// into the original bytes. Whatever it cannot handle leaves body as it is.
//
// Older pages are pruned again as they were when each was the newest, all at
// once. So is the newest, unless it repeats the page before it: whether it is
// a re-look (see relook) depends on how that page went out, so it waits for
// it.
func (p *Pipeline) rewrite(ctx context.Context, body []byte, pl plan) ([]byte, focusgate.Outcome) {
	pages := p.prunePages(ctx, pl)
	proactive := false
	if !pl.rescue && !pl.sizing && p.overWindow(body, pl.model, pages) {
		// Sent as it is, the request would be refused for its length:
		// rescue it now rather than after the refusal. The newest page's
		// selection was just stored, so only older pages cost a call.
		pl.rescue, proactive = true, true
		first := pages
		pages = p.prunePages(ctx, pl)
		for i := range pages {
			// What the first pass spent on the retriever is spent all
			// the same; the second found its selections stored.
			if a, b := &first[i].res, &pages[i].res; a.Cache == focusgate.CacheMiss && b.Cache == focusgate.CacheHit {
				b.Cache, b.Usage, b.RetrieverTime, b.Reasoning = a.Cache, a.Usage, a.RetrieverTime, a.Reasoning
			}
		}
	}
	newest := len(pages) - 1

	out := focusgate.Outcome{Model: pl.model, Mode: pl.mode, Variant: pl.variant, Pages: make([]focusgate.Page, len(pages)),
		Repeated: newest > 0 && pages[newest].obs.Text == pages[newest-1].obs.Text}
	for i, pg := range pages {
		out.Pages[i] = summary(pg)
	}
	// The newest observation is folded in first, so that a request with
	// nothing pruned reports the newest's reason.
	add(&out, pages[newest].res)
	current := currentFrom(pl.obs)
	for _, pg := range pages[current:newest] {
		add(&out, pg.res)
	}
	for _, pg := range pages[:current] {
		addOlder(&out, pg.res)
	}
	if pl.rescue {
		out.Rescue, out.RescuedEarly = focusgate.RescueNothingToPrune, proactive
		for _, pg := range pages {
			if pg.res.Status == focusgate.StatusPruned {
				out.Rescue = focusgate.RescueRescued
			}
		}
	}
	if pages[newest].res.Reason == focusgate.ReasonRelook {
		// The step is about the newest page, which went out whole on
		// purpose: older pages re-applied do not make the request pruned.
		out.Status, out.Reason, out.Relook = focusgate.StatusSkipped, focusgate.ReasonRelook, true
	}
	var edits []edit
	for i := range pages {
		if pg := &pages[i]; pg.res.Status == focusgate.StatusPruned {
			edits = append(edits, edit{obs: &pg.obs, pieces: pg.res.Pieces})
		}
	}
	if pl.priced {
		out.Priced = true
		out.SavedUSD = pl.actionPrice.Cost(out.TokensBefore-out.TokensAfter, 0)
		out.RetrieverUSD = pl.retrieval.price.Cost(out.Usage.PromptTokens, out.Usage.CompletionTokens)
	}
	if len(edits) == 0 {
		return body, out
	}
	return splice(body, edits), out
}

// prunePages prunes the observations of a plan. Older pages are pruned
// again as they were when each was the newest, all at once. So is the
// newest, unless it repeats the page before it: whether it is a re-look (see
// relook) depends on how that page went out, so it waits for it. A rescue
// prunes every page with a selection of its own and knows no re-looks.
//
// At most maxParallelPages pages are pruned at once. A request makes at most
// Options.MaxCalls retriever calls (see limitCalls).
func (p *Pipeline) prunePages(ctx context.Context, pl plan) []page {
	obs := pl.obs
	pages := make([]page, len(obs))
	for i := range obs {
		pages[i].obs = obs[i]
	}
	newest := len(obs) - 1
	current := currentFrom(obs)
	repeated := !pl.rescue && newest > 0 && obs[newest].Text == obs[newest-1].Text
	asks := func(i int) bool { return i >= current || p.opts.PruneAll || pl.rescue }
	settled, noCall := p.limitCalls(ctx, pl, pages, asks, repeated)
	var todo []int
	for i := newest; i >= 0; i-- {
		if (i < newest || !repeated) && !settled[i] {
			todo = append(todo, i)
		}
	}
	if len(todo) == 1 {
		// Most requests prune one page: this goroutine, whose stack
		// detection has grown, prunes it.
		i := todo[0]
		pages[i].res = p.prunePage(ctx, pl, obs[i], asks(i), noCall[i])
	} else {
		// Pages are pruned here, on the goroutine whose stack detection
		// has grown, unless they would wait on each other: a goroutine of
		// their own would grow its stack again and hand its result back,
		// which costs more than a held page's few microseconds of work. So
		// an older page whose selection this process holds (a tool loop's
		// older pages, mostly) is re-applied here, and one whose look-up
		// would wait (on Redis, past its in-process front) goes beside. The
		// pages that ask the retriever go beside too when there are several,
		// so that their calls overlap; a lone one is pruned here last, which
		// puts the held pages' work (well under a millisecond) before its
		// call.
		var g errgroup.Group
		g.SetLimit(maxParallelPages)
		beside := func(i int) {
			g.Go(func() error {
				pages[i].res = p.prunePage(ctx, pl, obs[i], asks(i), noCall[i])
				return nil
			})
		}
		var asking []int
		for _, i := range todo {
			if asks(i) {
				asking = append(asking, i)
			}
		}
		if len(asking) > 1 {
			for _, i := range asking {
				beside(i)
			}
		}
		for _, i := range todo {
			if asks(i) {
				continue
			}
			res, held := p.reapplyHeld(ctx, pl, obs[i])
			if !held {
				beside(i)
				continue
			}
			pages[i].res = res
		}
		if len(asking) == 1 {
			i := asking[0]
			pages[i].res = p.prunePage(ctx, pl, obs[i], true, noCall[i])
		}
		_ = g.Wait()
	}
	if pl.rescue {
		return pages
	}
	for i := 1; i < newest; i++ {
		if relook(pages[i-1], pages[i]) {
			pages[i].res = sentWhole(pages[i-1], pages[i])
		}
	}
	if repeated {
		if relook(pages[newest-1], pages[newest]) {
			pages[newest].res = sentWhole(pages[newest-1], pages[newest])
		} else {
			pages[newest].res = p.prunePage(ctx, pl, obs[newest], true, noCall[newest])
		}
	}
	return pages
}

// limitCalls holds a request to Options.MaxCalls retriever calls when more of
// its pages may ask the retriever (asks) than that: the pages whose
// selection is stored are pruned with it (settled), which costs no call, and
// the calls go to the others from the newest back, which is what the agent
// reads now; the rest may not call (noCall) and go out whole, or as stubs in
// a rescue. A newest page that repeats the one before it (repeated) is
// pruned once the re-look rule has spoken, but is given its call first.
func (p *Pipeline) limitCalls(ctx context.Context, pl plan, pages []page, asks func(int) bool, repeated bool) (settled, noCall []bool) {
	settled, noCall = make([]bool, len(pages)), make([]bool, len(pages))
	var askers []int
	for i := len(pages) - 1; i >= 0; i-- {
		if asks(i) {
			askers = append(askers, i)
		}
	}
	if p.opts.MaxCalls <= 0 || len(askers) <= p.opts.MaxCalls {
		return settled, noCall
	}
	newest := len(pages) - 1
	var g errgroup.Group
	g.SetLimit(maxParallelPages)
	for _, i := range askers {
		if i == newest && repeated {
			continue
		}
		g.Go(func() error {
			res := p.reapply(ctx, pl, pages[i].obs)
			if res.Reason != focusgate.ReasonNotCached {
				pages[i].res, settled[i] = res, true
			}
			return nil
		})
	}
	_ = g.Wait()
	left := p.opts.MaxCalls
	for _, i := range askers {
		switch {
		case settled[i]:
		case left > 0:
			left--
		default:
			noCall[i] = true
		}
	}
	return settled, noCall
}

// maxParallelPages bounds the pages of one request pruned at once. Their
// retriever calls are bounded on their own (Options.MaxCalls, and the
// gateway's prune.Gate); this bounds the goroutines and cache look-ups of a
// body that holds thousands of pages.
const maxParallelPages = 8

// currentFrom is the index of the first tree of the newest output. Every
// tree of that output is new, and the agent reads them all now: the two
// sides of a page its client cut in the middle (Gemini CLI, Codex, Cline),
// the copies a saved result holds. Each is pruned with a selection of its
// own and counted as the newest, not as an older page.
func currentFrom(obs []detect.Observation) int {
	newest := len(obs) - 1
	current := newest
	for current > 0 && obs[current-1].Path == obs[newest].Path {
		current--
	}
	return current
}

// prunePage prunes one observation: one that asks (the newest, or with
// PruneAll or in a rescue any) with a selection from the cache or the
// retriever, unless noCall forbids a call; an older one with the selection
// stored when it was the newest.
func (p *Pipeline) prunePage(ctx context.Context, pl plan, o detect.Observation, asks, noCall bool) (res prune.Result) {
	defer p.recoverPage(ctx, o, &res)
	in := pageInput(pl, o, noCall)
	if asks {
		return pl.retrieval.Pruner.Prune(ctx, in)
	}
	return pl.retrieval.Pruner.Reapply(ctx, in)
}

// reapplyHeld is prunePage for an older page whose selection this process
// holds in memory; it returns false, having pruned nothing, when finding the
// selection would wait.
func (p *Pipeline) reapplyHeld(ctx context.Context, pl plan, o detect.Observation) (res prune.Result, held bool) {
	defer p.recoverPage(ctx, o, &res)
	return pl.retrieval.Pruner.ReapplyHeld(ctx, pageInput(pl, o, false))
}

// recoverPage turns a panic in pruning page o into the page going out as it
// came: on a goroutine of its own, the panic would end the process, not just
// this request.
func (p *Pipeline) recoverPage(ctx context.Context, o detect.Observation, res *prune.Result) {
	if v := recover(); v != nil {
		p.logPanic(ctx, v)
		*res = prune.Result{Text: o.Text, Status: focusgate.StatusFailedOpen, Reason: focusgate.ReasonInternalError}
	}
}

// pageInput is what the pruner is given for page o of plan pl.
func pageInput(pl plan, o detect.Observation, noCall bool) prune.Input {
	tree := prune.NewTree(o.Text, syntaxOf(o.Format), o.Lines, o.FocusedBID)
	tree.Known = o.Known
	return prune.Input{
		Tree:       tree,
		Goal:       o.Goal,
		History:    o.History,
		Mode:       pl.mode,
		Variant:    pl.variant,
		Model:      pl.model,
		Credential: pl.credential,
		Vars:       pl.vars,
		NoCall:     noCall,
		// The whole page is what the upstream refused.
		StubsOnFailure: pl.rescue,
	}
}

// reapply prunes an observation with its stored selection, if any.
func (p *Pipeline) reapply(ctx context.Context, pl plan, o detect.Observation) prune.Result {
	return p.prunePage(ctx, pl, o, false, false)
}

// relook says whether page is a re-look: the agent was shown prev pruned and
// then looked at the very same tree again (a new snapshot with no action
// between, or an action that changed nothing), which is what an agent does
// when the page it got did not hold what it needed. Such a page goes out
// whole, so that the agent is never left blind twice. The rule reads only the
// conversation up to the page, so every later request makes the same
// decision about it and forwards the same prefix. Two copies of a tree in
// one output (a saved result that holds the page twice) are one look, and
// a page the client had cut, followed by the same tree uncut, is the agent
// reading on where the client told it the rest was (opencode's preview of a
// saved output, then the file's first lines), not looking again.
func relook(prev, pg page) bool {
	return prev.res.Status == focusgate.StatusPruned && prev.obs.Text == pg.obs.Text && prev.obs.Path != pg.obs.Path &&
		(!prev.obs.Cut || pg.obs.Cut)
}

// sentWhole is the result of a re-look: the page as it came, counted like
// the page before it, which has the same text.
func sentWhole(prev, pg page) prune.Result {
	n := prev.res.TokensBefore
	return prune.Result{Text: pg.obs.Text, Status: focusgate.StatusSkipped, Reason: focusgate.ReasonRelook, TokensBefore: n, TokensAfter: n}
}

// bypassed says whether model matches one of the BypassModels patterns.
// Both are compared as focusgate.BaseModel gives them (lower case, no
// provider prefix), so "o3*" matches "azure/O3-mini".
func (p *Pipeline) bypassed(model string) bool {
	m := focusgate.BaseModel(model)
	for _, pat := range p.opts.BypassModels {
		if ok, _ := path.Match(focusgate.BaseModel(pat), m); ok {
			return true
		}
	}
	return false
}

// syntaxes holds each registered format as a prune.Syntax, made once: a
// Format is a string, and making it an interface value for every page
// allocated.
var syntaxes = func() map[detect.Format]prune.Syntax {
	m := map[detect.Format]prune.Syntax{}
	for _, f := range detect.Formats() {
		m[f] = f
	}
	return m
}()

// syntaxOf returns format f as a prune.Syntax.
func syntaxOf(f detect.Format) prune.Syntax {
	if s, ok := syntaxes[f]; ok {
		return s
	}
	return f
}
