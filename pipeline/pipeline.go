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
	// ReapplyHeld is Reapply when the selection is held in this process's
	// memory; it returns false, and prunes nothing, when finding it would
	// wait.
	ReapplyHeld(ctx context.Context, in prune.Input) (prune.Result, bool)
}

var _ Pruner = (*prune.Pruner)(nil)

// Options configure a Pipeline. Pruner is required; the rest have defaults.
type Options struct {
	// Pruner prunes observations, with the retriever named RetrieverModel
	// (whose price is the cost side of the savings), for every provider and
	// API that Retrievals does not name; the client's own credential never
	// serves it.
	Pruner Pruner
	// Retrievals prune the requests of each provider and API with its own
	// retriever: Bedrock's Messages requests with Claude on Bedrock, say.
	Retrievals map[RetrievalKey]Retrieval
	// MaxCalls bounds the retriever calls one request may make (0: no
	// bound); pages past it go out as they came, or as stubs in a rescue.
	MaxCalls int
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

// RetrievalKey names the requests of one API sent to one provider.
type RetrievalKey struct {
	Provider string // focusgate.Provider.Name
	API      focusgate.API
}

// Retrieval is what prunes the requests of one API of one provider.
type Retrieval struct {
	Pruner         Pruner
	RetrieverModel string // its price is the cost side of the savings
	// ClientKey says the client's own credential may be handed to the
	// retriever: it is called on the provider the client speaks to.
	ClientKey bool
}

// Pipeline rewrites request bodies. It is safe for concurrent use.
//
// It is the gateway's focusgate.Rewriter.
type Pipeline struct {
	opts       Options
	log        *slog.Logger
	panics     panicLog
	inspecting *budget.Bytes
	// stopping ends when the pipeline stops pruning for shutdown.
	stopping context.Context
	stop     context.CancelCauseFunc

	retrievals map[RetrievalKey]retrieval
	fallback   retrieval
}

var _ focusgate.Rewriter = (*Pipeline)(nil)

// retrieval is a Retrieval with its retriever's price looked up.
type retrieval struct {
	Retrieval
	price  focusgate.Price
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
	priced := func(r Retrieval) retrieval {
		price, ok := opts.Prices.Lookup(r.RetrieverModel)
		return retrieval{Retrieval: r, price: price, priced: ok}
	}
	p.retrievals = map[RetrievalKey]retrieval{}
	for k, r := range opts.Retrievals {
		p.retrievals[k] = priced(r)
	}
	p.fallback = priced(Retrieval{Pruner: opts.Pruner, RetrieverModel: opts.RetrieverModel})
	return p
}

// retrievalFor is what prunes req: its provider's retrieval for its API.
func (p *Pipeline) retrievalFor(req focusgate.Request) retrieval {
	provider := req.Provider
	if provider == nil {
		provider = focusgate.DefaultProvider
	}
	if r, ok := p.retrievals[RetrievalKey{provider.Name, req.API}]; ok {
		return r
	}
	return p.fallback
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
