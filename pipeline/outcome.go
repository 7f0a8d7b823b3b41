package pipeline

import (
	"log/slog"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/prune"
)

// Outcome is what the pipeline did to one request, summed over the
// observations it considered. The gateway turns it into response headers,
// a log line, metrics and a dashboard record; `focusgate prune --request`
// prints it.
type Outcome struct {
	API          focusgate.API
	Status       focusgate.Status
	Reason       focusgate.Reason
	Model        string // the action model named in the request
	Mode         focusgate.Mode
	Variant      focusgate.Variant
	TokensBefore int
	TokensAfter  int
	Cache        cache.Outcome
	Retriever    time.Duration // longest wait for a selection (observations are pruned in parallel)
	Flagged      int
	Usage        prune.Usage // retriever tokens spent for this request
	Pages        []Page      // the observations considered, oldest first
	Older        Older       // what happened to the observations before the newest
	// Relook says the newest page was a re-look: the agent looked again at
	// the page it had just been shown pruned, and got it whole.
	Relook bool
	// Repeated says the newest page is the same as the page before it,
	// whether it was pruned or not: the share of such steps is compared
	// between the pruned arm and the holdout.
	Repeated bool
	// Rescue is set on a request pruned whole because it did not fit its
	// model's context window: Rescued when a page was pruned, else
	// NothingToPrune. RescuedEarly says the window table foresaw it, before
	// any refusal; otherwise the gateway asked after the upstream refused
	// the request, and tells the upstream's verdict on the retry.
	Rescue       focusgate.Rescue
	RescuedEarly bool

	// Priced is set when both models have a price: SavedUSD is the
	// action-model input the pruning avoided, RetrieverUSD what this
	// request's retriever calls cost (zero on a cache hit).
	Priced       bool
	SavedUSD     float64
	RetrieverUSD float64
}

// Page is one observation of a request and what became of it. Both refer
// to the request's own memory: a consumer that keeps them copies them.
type Page struct {
	Observation detect.Observation
	Result      prune.Result
}

// Older counts the observations of a request that are not its newest, by
// what happened to them.
type Older struct {
	Reapplied int // pruned again with the selection stored when each was the newest
	Pruned    int // pruned with a new selection (FOCUSGATE_PRUNE_ALL)
	Left      int // forwarded as they came: no selection known, or none that paid
}

func skipped(reason focusgate.Reason) Outcome {
	return Outcome{Status: focusgate.Skipped, Reason: reason}
}

// add folds one observation's result into the request's outcome. The
// request is as pruned as its most pruned observation (pruned, then
// failed-open, then skipped, each with the first reason met), and as
// uncached as its least cached one (miss, then shared, then hit).
func (o *Outcome) add(r prune.Result) {
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
func (o *Outcome) addOlder(r prune.Result) {
	reapplied := r.Status == focusgate.Pruned && r.Cache == cache.Hit
	switch {
	case reapplied && o.Status == focusgate.FailedOpen:
		r.Status, r.Reason = focusgate.Skipped, ""
	case reapplied && o.Status != focusgate.Pruned:
		r.Reason = ""
	}
	o.add(r)
	switch {
	case reapplied:
		o.Older.Reapplied++
	case r.Status == focusgate.Pruned:
		o.Older.Pruned++
	case r.Reason != focusgate.BelowMinTokens:
		o.Older.Left++
	}
}

var (
	statusRank = map[focusgate.Status]int{focusgate.Skipped: 1, focusgate.FailedOpen: 2, focusgate.Pruned: 3}
	cacheRank  = map[cache.Outcome]int{cache.Hit: 1, cache.Shared: 2, cache.Miss: 3}
)

// Quiet says the request held nothing to prune: such requests, most of a
// gateway's traffic, are logged at debug level only.
func (o Outcome) Quiet() bool {
	return len(o.Pages) == 0 && o.Status == focusgate.Skipped && o.Reason != focusgate.Busy
}

// LogAttrs describes the outcome for a log line.
func (o Outcome) LogAttrs() []slog.Attr {
	attrs := []slog.Attr{
		slog.String("status", string(o.Status)),
		slog.String("api", o.API.String()),
		slog.String("model", o.Model),
		slog.String("mode", string(o.Mode)),
		slog.String("prompt", string(o.Variant)),
		slog.Int("observations", len(o.Pages)),
		slog.Int("tokens_before", o.TokensBefore),
		slog.Int("tokens_after", o.TokensAfter),
		slog.String("cache", string(o.Cache)),
		slog.Int64("retriever_ms", o.Retriever.Milliseconds()),
	}
	if o.TokensBefore > 0 {
		attrs = append(attrs, slog.Float64("reduction", 1-float64(o.TokensAfter)/float64(o.TokensBefore)))
	}
	if o.Reason != "" {
		attrs = append(attrs, slog.String("reason", string(o.Reason)))
	}
	if o.Flagged > 0 {
		attrs = append(attrs, slog.Int("flagged_lines", o.Flagged))
	}
	if o.Older != (Older{}) {
		attrs = append(attrs, slog.Int("older_reapplied", o.Older.Reapplied), slog.Int("older_left", o.Older.Left))
		if o.Older.Pruned > 0 {
			attrs = append(attrs, slog.Int("older_pruned", o.Older.Pruned))
		}
	}
	if o.Priced {
		attrs = append(attrs, slog.Float64("saved_usd", o.SavedUSD-o.RetrieverUSD))
	}
	if o.Rescue != "" {
		attrs = append(attrs, slog.String("rescue", string(o.Rescue)), slog.Bool("rescued_early", o.RescuedEarly))
	}
	return attrs
}
