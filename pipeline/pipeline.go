// Package pipeline is what focusgate does to one request body: it finds the
// page observations, has the newest pruned and the older ones pruned again as
// they were, and splices the results into the original bytes. It knows
// nothing of HTTP: a body, its API and the request's settings go in; the
// bytes to forward and an Outcome come out. The gateway (package proxy),
// `focusgate prune --request` and the tests share it, so what the command
// prints is what the gateway forwards.
//
// Everything here fails open: whatever goes wrong, the body goes out as it
// came (older pages re-applied from the cache aside), and the Outcome says
// why.
package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/internal/budget"
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

var _ Pruner = (*prune.Pruner)(nil)

// Options configure a Pipeline. Pruner is required; the rest have defaults.
type Options struct {
	// Pruner prunes observations, with the retriever named RetrieverModel
	// (whose price is the cost side of the savings), for every API that
	// ByAPI does not name; the client's own credential never serves it
	// (ByAPI says which retrievals speak the client's provider).
	Pruner Pruner
	// ByAPI prunes the requests of some APIs with another retriever: the
	// Anthropic Messages API's with Claude, say.
	ByAPI map[focusgate.API]Retrieval
	// Finder finds the observations of a body and remembers the pages it
	// has seen; nil finds them every time anew.
	Finder *detect.Finder
	// Mode and Variant are the defaults a Request's Mode and Prompt
	// override.
	Mode    focusgate.Mode
	Variant focusgate.Variant
	// PruneAll prunes every observation of a conversation that has no
	// stored selection, not only the newest.
	PruneAll bool
	// BypassModels are glob patterns (path.Match syntax, matched against
	// focusgate.BaseModel of the action model) of models never pruned.
	BypassModels []string
	// Budget bounds all the work done on one request (detection, token
	// counting, the cache, the retriever, waiting for another request or
	// replica computing the same selection); past it the original body is
	// returned. Default 20s.
	Budget time.Duration
	// Memory bounds the request bytes under inspection at once; a request
	// that does not fit is returned uninspected. The gateway shares it with
	// the decoding of compressed bodies. Nil means a budget of its own of
	// InspectBudgetBytes (default 64 MiB).
	Memory             *budget.Bytes
	InspectBudgetBytes int64
	// Prices estimate each request's savings; nil uses the built-in table.
	Prices *pricing.Table
	// Windows are the action models' context windows: a request estimated
	// over its model's window is rescued before it is sent (see Rescue).
	// Nil uses the built-in table.
	Windows        *pricing.Windows
	RetrieverModel string
	// SkipUneconomic skips pruning when the retriever/action input price
	// ratio is at least ExpectedReduction: the retriever would cost more
	// than the pruning saves.
	SkipUneconomic    bool
	ExpectedReduction float64
	Logger            *slog.Logger
}

// Retrieval is what prunes the requests of one API.
type Retrieval struct {
	Pruner         Pruner
	RetrieverModel string // its price is the cost side of the savings
	// ClientKey says the client's own credential may be handed to the
	// retriever (it speaks the provider's API the client speaks).
	ClientKey bool
}

// Request is one request body and the settings it came with.
type Request struct {
	API  focusgate.API
	Body []byte
	// Model is the action model when the request's path names it (the
	// Gemini API's .../models/{model}:generateContent); "" reads it from
	// the body.
	Model string
	// Mode and Prompt override the pipeline's default mode and prompt
	// variant when not empty; they are read with focusgate.ParseMode and
	// ParseVariant, and an unknown value skips the request (bad-header).
	Mode, Prompt string
	// Credential is the client's own API key, for a retriever that has
	// none configured. It is never logged and never part of a cache key.
	Credential string
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
	// Rescue asks for every page of the conversation pruned: the upstream
	// refused the request as longer than its model's context window. Older
	// pages without a stored selection are asked of the retriever, in
	// parallel, and stored like any other selection, so that the next
	// request of the conversation forwards them byte-identical; a page the
	// retriever cannot serve goes out as stubs; the re-look rule and the
	// economics gate give way. The Outcome's Rescue says whether anything
	// was pruned.
	Rescue bool
}

// Pipeline rewrites request bodies. It is safe for concurrent use.
type Pipeline struct {
	opts       Options
	log        *slog.Logger
	panics     panicLog
	inspecting *budget.Bytes
	// stopping ends when the pipeline stops pruning for shutdown.
	stopping context.Context
	stop     context.CancelCauseFunc

	retrievals map[focusgate.API]retrieval
}

// retrieval is a Retrieval with its retriever's price looked up.
type retrieval struct {
	Retrieval
	price  pricing.Price
	priced bool
}

// New returns a Pipeline.
func New(opts Options) *Pipeline {
	if opts.Budget <= 0 {
		opts.Budget = 20 * time.Second
	}
	if opts.InspectBudgetBytes <= 0 {
		opts.InspectBudgetBytes = 64 << 20
	}
	if opts.Prices == nil {
		opts.Prices = pricing.Default()
	}
	if opts.Windows == nil {
		opts.Windows = pricing.DefaultWindows()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Pipeline{opts: opts, log: opts.Logger}
	p.inspecting = opts.Memory
	if p.inspecting == nil {
		p.inspecting = budget.New(opts.InspectBudgetBytes)
	}
	p.stopping, p.stop = context.WithCancelCause(context.Background())
	p.retrievals = map[focusgate.API]retrieval{}
	for _, api := range focusgate.APIs {
		r, ok := opts.ByAPI[api]
		if !ok {
			r = Retrieval{Pruner: opts.Pruner, RetrieverModel: opts.RetrieverModel}
		}
		price, priced := opts.Prices.Lookup(r.RetrieverModel)
		p.retrievals[api] = retrieval{Retrieval: r, price: price, priced: priced}
	}
	return p
}

// errShutdown ends the inspections still running once the pipeline stops
// pruning for shutdown.
var errShutdown = errors.New("pipeline: shutting down")

// Stop makes the pipeline return every body from now on without waiting for
// a selection: inspections in progress give up and return the original
// (failed-open; reason=shutdown), later ones are skipped (skipped;
// reason=shutdown). The gateway calls it when it stops accepting
// connections, so that the grace period is left to the upstream's answers
// rather than spent waiting for the retriever.
func (p *Pipeline) Stop() {
	p.stop(errShutdown)
}
