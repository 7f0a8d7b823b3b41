package focusgate

import (
	"context"
	"log/slog"
	"time"
)

// Request is one request body and the settings it came with, as the gateway
// and the command line hand it to the pipeline.
type Request struct {
	API API
	// Provider is where the request goes, from the route it took: its
	// retriever for API prunes the request, with its credentials. Nil means
	// DefaultProvider.
	Provider *Provider
	// Vars are the variables of the route it took, which the retriever's
	// path may name (Vertex AI's project and location).
	Vars Vars
	// Body is the caller's: its memory may be reused once Rewrite has
	// returned and Holder been released, so nothing kept beyond that may be
	// a view of it.
	Body []byte
	// Model is the action model when the request's path names it (Gemini's
	// .../models/{model}:generateContent, Bedrock's /model/{id}/invoke, an
	// Azure deployment's model); "" reads it from the body.
	Model string
	// Aliases map the names the request's provider gives models (Azure's
	// deployments) to model names, for the model the body names.
	Aliases map[string]string
	// Mode and Prompt override the pipeline's default mode and prompt
	// variant when not empty; they are read with ParseMode and
	// ParseVariant, and an unknown value skips the request (bad-header).
	Mode, Prompt string
	// Credential is the client's own credential, for a retriever of the
	// request's provider when the gateway has none. It is never logged and
	// never part of a cache key.
	Credential ClientCredential
	// Sizing says the body is to be counted, not answered (the Messages
	// API's count_tokens). Claude Code sizes one tool output, alone in a
	// message, before deciding to save it to a file: such a body goes as
	// it came, since a count of anything but what the client sent would
	// break its own limits. A conversation is counted as it would be sent.
	Sizing bool
	// Holdout says the request's conversation is in the holdout: its body
	// goes as it came, and is only read for the comparison of the arms
	// (its model, and whether its newest page repeats the one before).
	Holdout bool
	// WantModel says the outcome must name the model even when the request
	// is skipped before its model is read (busy, shutting down, past the
	// deadline): the holdout prices the step by it, and a step without one
	// leaves its whole conversation out of the dollar comparison. The
	// model is then read from the body (detect.Model): from its end, where
	// the agents that name it late write it, else by a scan.
	WantModel bool
	// Rescue asks for every page of the conversation pruned: the upstream
	// refused the request as longer than its model's context window. Older
	// pages without a stored selection are asked of the retriever, in
	// parallel, and stored like any other selection, so that the next
	// request of the conversation forwards them byte-identical; a page the
	// retriever cannot serve goes out as stubs; the re-look rule and the
	// economics gate give way. The Outcome's Rescue says whether anything
	// was pruned.
	Rescue bool
	// Unread says the gateway could not read the body (its encoding did
	// not decode: ReasonUndecodable; the memory to decode it was taken: ReasonBusy):
	// the body goes as it came, skipped for this reason, without being
	// inspected.
	Unread Reason
	// Holder, when set, is held before the body is handed to work that may
	// outlive Rewrite (an inspection abandoned at its deadline goes on
	// reading the body on its worker while the body goes out as it came),
	// and released once that work is done.
	Holder Holder
}

// A Holder keeps a request body's memory from being reused while a reader
// that may outlive the request's handling still reads it: the gateway reads
// bodies into buffers it reuses.
type Holder interface {
	Hold()    // a reader begins
	Release() // that reader is done
}

// Rewriter rewrites the body of a request; *pipeline.Pipeline is the
// implementation. It never fails: a body it cannot handle comes back as it
// went in, and the outcome says why. A body other than the request's is a
// buffer of internal/bufpool that the caller owns and may give back once
// nothing reads it.
type Rewriter interface {
	Rewrite(ctx context.Context, req Request) ([]byte, Outcome)
}

// CacheOutcome says where a stored retriever selection came from.
type CacheOutcome string

const (
	// CacheHit means the selection was stored already.
	CacheHit CacheOutcome = "hit"
	// CacheMiss means this request asked the retriever for it.
	CacheMiss CacheOutcome = "miss"
	// CacheShared means another request, in this process or another
	// replica, asked the retriever for it at the same time, and this one
	// waited for its answer.
	CacheShared CacheOutcome = "shared"
)

// RedisStats is the health of the Redis cache, as the gateway's metrics
// expose it; *cache.Redis reports it.
type RedisStats struct {
	Up bool
	// Skipped counts calls not sent because Redis was known to be down.
	Skipped int64
	// Errors counts failed calls by operation: get, set, delete, lock, wait, ping.
	Errors map[string]int64
}

// Range is an inclusive range of line numbers of a page, counted from 1 as
// the retriever sees them.
type Range struct{ From, To int }

// RetrieverUsage is the retriever's token usage.
type RetrieverUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// Add adds v to u.
func (u *RetrieverUsage) Add(v RetrieverUsage) {
	u.PromptTokens += v.PromptTokens
	u.CompletionTokens += v.CompletionTokens
}

// Outcome is what focusgate did to one request, summed over the
// observations it considered. The pipeline makes every Outcome; the gateway
// turns it into response headers, a log line, metrics and a dashboard
// record, and `focusgate prune --request` prints it.
type Outcome struct {
	API          API
	Provider     string // the provider's name
	Status       Status
	Reason       Reason
	Model        string // the action model named in the request
	Mode         Mode
	Variant      Variant
	TokensBefore int
	TokensAfter  int
	Cache        CacheOutcome
	Retriever    time.Duration // longest wait for a selection (observations are pruned in parallel)
	Flagged      int
	Usage        RetrieverUsage // retriever tokens spent for this request
	Pages        []Page         // the observations considered, oldest first
	Older        Older          // what happened to the observations before the newest
	// Relook says the newest page was a re-look: the agent looked again at
	// the page it had just been shown pruned, and got it whole.
	Relook bool
	// Repeated says the newest page is the same as the page before it,
	// whether it was pruned or not: the share of such steps is compared
	// between the pruned arm and the holdout.
	Repeated bool
	// Rescue is set on a request pruned whole because it did not fit its
	// model's context window: RescueRescued when a page was pruned, else
	// RescueNothingToPrune. RescuedEarly says the window table foresaw it, before
	// any refusal; otherwise the gateway asked after the upstream refused
	// the request, and tells the upstream's verdict on the retry.
	Rescue       Rescue
	RescuedEarly bool

	// Priced is set when both models have a price: SavedUSD is the
	// action-model input the pruning avoided, RetrieverUSD what this
	// request's retriever calls cost (zero on a cache hit).
	Priced       bool
	SavedUSD     float64
	RetrieverUSD float64
}

// Page is one observation of a request and what became of it, flat: what
// the gateway's headers, metrics and dashboard read of it. Its strings and
// slices refer to the request's own memory: a consumer that keeps them
// copies them.
type Page struct {
	Format       string // the page format's registered name ("axtree", "playwright", ...)
	Status       Status
	Reason       Reason // why a status other than Pruned; a page pruned by a rescue as stubs keeps its failure's
	TokensBefore int
	TokensAfter  int
	Cache        CacheOutcome  // empty when the retriever was not consulted
	Retriever    time.Duration // time spent waiting for the selection; 0 on a hit
	Usage        RetrieverUsage
	Flagged      int // lines removed as prompt injection

	// What the selection was: the retriever's ranges, the line numbers it
	// flagged as injections, and the lines kept verbatim after
	// post-processing (Pruned only).
	Ranges       []Range
	FlaggedLines []int
	Kept         []Range

	// Lines are the tree's elements, with offsets into Original, and
	// FocusedBID the focused element's id, so that a report can number the
	// lines as the retriever saw them and mark the focus.
	Lines      []Line
	FocusedBID string

	Goal    string
	History string
	// Reasoning is what the retriever wrote before its answer (on a miss
	// only: it is not cached).
	Reasoning string
	Original  string // the page as the agent sent it
	Forwarded string // the page as the action model received it
}

// Older counts the observations of a request that are not its newest, by
// what happened to them.
type Older struct {
	Reapplied int // pruned again with the selection stored when each was the newest
	Pruned    int // pruned with a new selection (FOCUSGATE_PRUNE_ALL)
	Left      int // forwarded as they came: no selection known, or none that paid
}

// Retried is o, the outcome of a request sent again with every page pruned
// after the upstream refused it as longer than its model's context window,
// once the upstream took it: the request's outcome, with what the first
// attempt (first) spent on the retriever added, since both were paid for.
func (o Outcome) Retried(first Outcome) Outcome {
	o.Usage.Add(first.Usage)
	o.RetrieverUSD += first.RetrieverUSD
	return o
}

// Refused is o, the outcome of a request the upstream refused as longer
// than its model's context window, when the refusal is what goes to the
// client: result says how the rescue ended, nothing was saved (the action
// model read nothing), and what the rescue (spent) cost on the retriever was
// spent all the same.
func (o Outcome) Refused(result Rescue, spent Outcome) Outcome {
	o.Rescue = result
	o.SavedUSD = 0
	o.Usage.Add(spent.Usage)
	o.RetrieverUSD += spent.RetrieverUSD
	return o
}

// Quiet says the request held nothing to prune: such requests, most of a
// gateway's traffic, are logged at debug level only.
func (o Outcome) Quiet() bool {
	return len(o.Pages) == 0 && o.Status == StatusSkipped && o.Reason != ReasonBusy
}

// LogAttrs describes the outcome for a log line.
func (o Outcome) LogAttrs() []slog.Attr {
	attrs := []slog.Attr{
		slog.String("status", string(o.Status)),
		slog.String("api", o.API.String()),
		slog.String("model", ClientName(o.Model)),
		slog.String("provider", o.Provider),
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
