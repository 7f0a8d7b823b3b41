// Package prune shrinks web-page observations before they reach the action
// model, the LineRetriever / FocusAgent way: a cheap retriever model reads
// the numbered lines of a tree and names the ones that matter for the goal,
// and the rest is removed or reduced to stubs.
//
// Everything here fails open. Pruning saves money but is never required, so
// whatever goes wrong (the retriever is slow, down or talks nonsense, the
// tree is odd) the observation goes on unpruned, and the Result says why.
package prune

import (
	"bytes"
	"context"

	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/internal/memo"
)

// keyVersion starts every cache key; bump it whenever the meaning of a
// cached Selection changes (numbering, answer parsing, prompts), or what a
// key hashes. v3 hashes the page's hash instead of its text, v4 the goal's
// hash too, v5 the history's.
const keyVersion = "prune-selection-v5"

// defaultMemoBytes bounds the token-count memo when Config.Counter is nil.
const defaultMemoBytes = 32 << 20

// Input is one observation of one request.
type Input struct {
	Tree    Tree
	Goal    string
	History string
	Mode    focusgate.Mode    // empty means Remove
	Variant focusgate.Variant // empty means LineVariant
	Model   string            // the action model: picks the token encoding
	// Credential is the client's own and Vars its request's route
	// variables, passed on to the Query; the credential is never logged and
	// never part of a cache key.
	Credential focusgate.ClientCredential
	Vars       focusgate.Vars
	// StubsOnFailure makes Prune write a page it could not get a selection
	// for (the retriever failed, timed out or answered nothing usable) as
	// stubs of its root and focused element, instead of leaving it whole.
	// The context-window rescue asks for it: there the whole page is what
	// the upstream refused. Such a result is not stored: the next request
	// asks the retriever again.
	StubsOnFailure bool
	// NoCall says the retriever may not be asked: the request made all the
	// calls it may (FOCUSGATE_RETRIEVER_MAX_CALLS). A stored selection
	// still serves; without one the page is skipped (retriever-limit), as
	// stubs with StubsOnFailure.
	NoCall bool
}

// Result says what happened to one observation. Text is the original unless
// Status is Pruned.
type Result struct {
	Text string
	// Pieces are how a pruned Text is made of the tree's lines (runs kept,
	// stubs, markers), so that the page can be written back through the
	// wrappers it came in with its kept lines as the client sent them (see
	// detect's Observation.AppendPruned); nil unless Status is Pruned.
	Pieces []focusgate.Piece
	Status focusgate.Status
	// Reason explains a status other than Pruned.
	Reason        focusgate.Reason
	TokensBefore  int
	TokensAfter   int
	Cache         focusgate.CacheOutcome   // empty when the retriever was not consulted
	RetrieverTime time.Duration            // time spent waiting for the selection; 0 on a hit
	Flagged       int                      // lines removed as prompt injection
	Usage         focusgate.RetrieverUsage // retriever tokens spent for this request; zero on a hit or shared call

	// What the selection was, for reports such as the dashboard: the
	// retriever's ranges, the line numbers it flagged as injections, the
	// lines kept verbatim after post-processing (Pruned only), and its
	// reasoning (only on a Miss: it is not cached).
	Ranges       []focusgate.Range
	FlaggedLines []int
	Kept         []focusgate.Range
	Reasoning    string
}

// Retriever chooses the lines of a tree that matter to a query.
type Retriever interface {
	Select(ctx context.Context, q Query) (Selection, error)
}

// Cache returns the value stored under key, or computes and stores it. It
// runs identical concurrent computations once and says where the value came
// from.
type Cache interface {
	Fetch(ctx context.Context, key string, compute func(context.Context) ([]byte, error)) ([]byte, focusgate.CacheOutcome, error)
	// Lookup returns the value stored under key without computing it, or
	// an error (cache.ErrNotFound when there is none).
	Lookup(ctx context.Context, key string) ([]byte, error)
	// LookupHeld is Lookup from this process's memory alone: it never
	// waits, and says cache.ErrNotHeld when only the store could answer.
	LookupHeld(key string) ([]byte, error)
}

// deleter is implemented by caches that can forget a value, such as
// *cache.Cache: a stored selection that does not decode is deleted and
// computed again.
type deleter interface {
	Delete(ctx context.Context, key string)
}

var (
	_ Cache   = (*cache.Cache)(nil)
	_ deleter = (*cache.Cache)(nil)
)

// Config configures a Pruner.
type Config struct {
	RetrieverModel string // part of the cache key
	MinTokens      int    // observations with fewer tokens are left alone
	UseHistory     bool   // send the agent's history to the retriever
	Counter        *Counter
	// PageKeyMemoBytes bounds the memo of each page's hash and each goal's,
	// so that the cache key of a page or goal seen before does not hash its
	// text again; zero or less disables it.
	PageKeyMemoBytes int
	// AppliedMemoBytes bounds the memo of selections applied to pages, so
	// that a page pruned again with the selection it had before (an older
	// page of a conversation, re-applied on every later request, or a
	// cache hit) is not rendered and counted again; zero or less disables
	// it.
	AppliedMemoBytes int
	Logger           *slog.Logger
	// Gate bounds the retriever calls in flight across the gateway; nil
	// bounds nothing.
	Gate *Gate
}

// Pruner prunes observations. It is safe for concurrent use.
type Pruner struct {
	cfg       Config
	retriever Retriever
	cache     Cache
	textKeys  *memo.Memo[string]
	applieds  *memo.Memo[finished]
	log       *slog.Logger
}

// finished is a stored selection applied to a page in a mode and counted.
type finished struct {
	raw   []byte // the selection as stored, which sel decodes
	sel   Selection
	a     applied
	after int
}

// size approximates what f holds, for the memo's budget.
func (f *finished) size() int {
	const rangeSize, pieceSize = 16, 24
	return len(f.raw) + len(f.a.text) + pieceSize*len(f.a.pieces) + rangeSize*(len(f.a.kept)+len(f.sel.Ranges)) + 8*len(f.sel.Flagged)
}

// New returns a Pruner. A nil cache means no caching: every call asks the
// retriever and reports focusgate.CacheMiss.
func New(cfg Config, r Retriever, c Cache) *Pruner {
	if cfg.Counter == nil {
		cfg.Counter = NewCounter(defaultMemoBytes)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Pruner{cfg: cfg, retriever: r, cache: c, log: log,
		textKeys: memo.New[string](cfg.PageKeyMemoBytes), applieds: memo.New[finished](cfg.AppliedMemoBytes)}
}

// Prune returns the observation pruned, or the original with the reason it
// was not. It never returns an error and never panics: a gateway in front of
// an agent must not be the reason a step fails.
func (p *Pruner) Prune(ctx context.Context, in Input) Result {
	res := p.prune(ctx, in)
	failed := res.Status == focusgate.StatusFailedOpen || res.Reason == focusgate.ReasonRetrieverLimit
	if in.StubsOnFailure && failed && res.TokensBefore > 0 {
		return p.stubbed(in, res)
	}
	return res
}

// stubbed writes a page that could not be pruned as stubs with nothing
// selected: every line but the root and the focused element becomes its id
// and role. It keeps the Reason the selection failed for, so that the
// retriever call is still reported as failed. The tokens are counted without
// the request's context, which may be what ended the retriever call.
func (p *Pruner) stubbed(in Input, res Result) Result {
	if validate(in.Tree) != nil {
		return res
	}
	a, err := apply(in.Tree, Selection{}, focusgate.ModeStubs)
	if err != nil {
		return res
	}
	after := p.cfg.Counter.Count(in.Model, a.text)
	if after >= res.TokensBefore {
		return res
	}
	res.Text, res.Pieces, res.Status, res.TokensAfter, res.Kept = a.text, a.pieces, focusgate.StatusPruned, after, a.kept
	return res
}

func (p *Pruner) prune(ctx context.Context, in Input) (res Result) {
	res = Result{Text: in.Tree.Text}
	defer p.recoverPanic(ctx, in, &res)
	j, ok := p.prepare(ctx, in, &res)
	if !ok {
		return res
	}

	// The reasoning travels beside the cached value, not in it, and so does
	// what a failed call cost (a bad answer and its re-ask are two paid
	// calls). The computation may outlive this request (others may wait for
	// it), hence the atomics.
	var reasoning atomic.Pointer[string]
	var spent atomic.Pointer[focusgate.RetrieverUsage]
	compute := func(ctx context.Context) ([]byte, error) {
		if err := p.cfg.Gate.enter(ctx); err != nil {
			return nil, err
		}
		defer p.cfg.Gate.leave()
		q := j.q
		q.Numbered = Number(in.Tree)
		sel, err := p.retriever.Select(ctx, q)
		if err != nil {
			spent.Store(&sel.Usage)
			return nil, err
		}
		reasoning.Store(&sel.Reasoning)
		return json.Marshal(sel)
	}
	start := time.Now()
	var raw []byte
	var err error
	fetchCtx, span := tracer.Start(ctx, "focusgate.cache")
	switch {
	case in.NoCall:
		raw, err = p.stored(fetchCtx, j.key)
		res.Cache = focusgate.CacheHit
	case p.cache == nil:
		raw, err = compute(fetchCtx)
		res.Cache = focusgate.CacheMiss
	default:
		raw, res.Cache, err = p.cache.Fetch(fetchCtx, j.key, compute)
	}
	span.SetAttributes(attribute.String("focusgate.cache", string(res.Cache)))
	span.End()
	if errors.Is(err, ErrCallLimit) {
		return skip(res, focusgate.ReasonRetrieverLimit)
	}
	if res.Cache != focusgate.CacheHit {
		res.RetrieverTime = time.Since(start)
	}
	if err != nil {
		if u := spent.Load(); u != nil && res.Cache == focusgate.CacheMiss {
			res.Usage = *u
		}
		return p.failOpen(ctx, res, Reason(err), err)
	}
	f, ok := p.remembered(j, raw)
	if ok {
		return p.result(f, res)
	}
	sel, err := decodeSelection(raw)
	if err != nil {
		// A stored value that does not decode (written by another version,
		// or damaged) would fail every request for this page until it
		// expires: forget it and ask once more.
		d, ok := p.cache.(deleter)
		if res.Cache == focusgate.CacheMiss || !ok {
			return p.failOpen(ctx, res, focusgate.ReasonCacheError, err)
		}
		p.log.LogAttrs(ctx, slog.LevelWarn, "prune: cached selection does not decode; deleted and computed again", slog.Any("error", err))
		d.Delete(ctx, j.key)
		start = time.Now()
		raw, res.Cache, err = p.cache.Fetch(ctx, j.key, compute)
		res.RetrieverTime = time.Since(start)
		if err != nil {
			return p.failOpen(ctx, res, Reason(err), err)
		}
		if sel, err = decodeSelection(raw); err != nil {
			return p.failOpen(ctx, res, focusgate.ReasonCacheError, err)
		}
	}
	if r := reasoning.Load(); r != nil && res.Cache == focusgate.CacheMiss {
		res.Reasoning = *r
	}
	return p.finish(ctx, in, j, sel, raw, res)
}

// stored is the selection stored under key, or ErrCallLimit when there is
// none: the request may make no call to compute it.
func (p *Pruner) stored(ctx context.Context, key string) ([]byte, error) {
	if p.cache == nil {
		return nil, ErrCallLimit
	}
	raw, err := p.cache.Lookup(ctx, key)
	if err != nil {
		return nil, ErrCallLimit
	}
	return raw, nil
}

// decodeSelection reads a selection as the cache holds it. A cache hit reads
// one on every request, and encoding/json's reflection cost as much as the
// rest of applying it, so the form json.Marshal writes is read by hand
// (readSelection); any other is left to encoding/json.
func decodeSelection(raw []byte) (Selection, error) {
	if sel, ok := readSelection(raw); ok {
		return sel, nil
	}
	var sel Selection
	if err := json.Unmarshal(raw, &sel); err != nil {
		return Selection{}, fmt.Errorf("prune: decoding cached selection: %w", err)
	}
	return sel, nil
}

// job is what Prune and Reapply work out before they need a selection.
type job struct {
	mode focusgate.Mode
	q    Query // without Numbered, which only the retriever needs
	key  string
	tok  tokenizer
}

// prepare checks the input, counts its tokens and builds the cache key. It
// returns false, with res filled in, when there is nothing more to do.
func (p *Pruner) prepare(ctx context.Context, in Input, res *Result) (job, bool) {
	mode, err := focusgate.ParseMode(string(in.Mode))
	if err != nil {
		*res = p.failOpen(ctx, *res, focusgate.ReasonBadInput, err)
		return job{}, false
	}
	if mode == focusgate.ModeOff {
		*res = skip(*res, focusgate.ReasonModeOff)
		return job{}, false
	}
	variant, err := focusgate.ParseVariant(string(in.Variant))
	if err != nil {
		*res = p.failOpen(ctx, *res, focusgate.ReasonBadInput, err)
		return job{}, false
	}
	tok := tokenizerOf(in.Model)
	res.TokensBefore, err = p.cfg.Counter.countTree(ctx, tok, in.Tree)
	if err != nil {
		*res = p.failOpen(ctx, *res, Reason(err), err)
		return job{}, false
	}
	res.TokensAfter = res.TokensBefore
	if res.TokensBefore < p.cfg.MinTokens {
		*res = skip(*res, focusgate.ReasonBelowMinTokens)
		return job{}, false
	}
	if !in.Tree.Known.Sound() {
		if err := validate(in.Tree); err != nil {
			*res = p.failOpen(ctx, *res, focusgate.ReasonPostprocessError, err)
			return job{}, false
		}
		in.Tree.Known.SetSound()
	}
	q := Query{Goal: in.Goal, Variant: variant, Lines: len(in.Tree.Lines), Credential: in.Credential, Vars: in.Vars}
	history := ""
	if p.cfg.UseHistory && in.History != "" {
		q.History, history = in.History, p.textKey(in.History)
	}
	key := cache.Key(keyVersion, p.cfg.RetrieverModel, string(variant), p.textKey(q.Goal), history, p.pageKey(in.Tree))
	return job{mode: mode, q: q, key: key, tok: tok}, true
}

// pageKey is textKey of a page's text, taken from and recorded in what is
// known of it.
func (p *Pruner) pageKey(t Tree) string {
	if k, ok := t.Known.Key(); ok {
		return k
	}
	k := p.textKey(t.Text)
	t.Known.SetKey(k)
	return k
}

// textKey is the hash of a page's text, a goal's or a history's, that cache
// keys hold. Hashing a page of a hundred kilobytes, or a history of eight,
// costs more than looking it up: an agent sends each page again in every
// later request of its conversation and its goal in every request, and a
// request whose older pages are pruned again asks a key of each with the
// same goal and history.
func (p *Pruner) textKey(text string) string {
	if k, ok := p.textKeys.Get(text); ok {
		return k
	}
	k := cache.Key(text)
	p.textKeys.Put(text, k, len(k))
	return k
}

// remembered returns the outcome of applying raw, a selection as stored,
// for j, if it is remembered. That outcome depends on the page and the query
// (both in the cache key), the mode and the tokenizer that counts the result,
// which memoKey appends, and on the selection, which the outcome keeps: a
// selection of a large page is kilobytes, too long for a key made in a
// buffer of the stack, and a request re-applies a selection to each of its
// older pages, dozens in a tool loop. A key holds the outcome of the last
// selection applied under it.
func (p *Pruner) remembered(j job, raw []byte) (finished, bool) {
	var buf [256]byte
	f, ok := p.applieds.GetBytes(memoKey(buf[:0], j))
	if !ok || !bytes.Equal(f.raw, raw) {
		return finished{}, false
	}
	return f, true
}

// memoKey appends to b the key of applying a selection for j (see
// remembered).
func memoKey(b []byte, j job) []byte {
	b = append(append(b, j.key...), 0)
	b = append(append(b, j.mode...), 0)
	return append(b, j.tok.encoding...)
}

// finish applies a selection, as the cache holds it, in the job's mode,
// and remembers the outcome (see remembered).
func (p *Pruner) finish(ctx context.Context, in Input, j job, sel Selection, raw []byte, res Result) Result {
	a, err := apply(in.Tree, sel, j.mode)
	if err != nil {
		res.Ranges, res.FlaggedLines = sel.Ranges, sel.Flagged
		return p.failOpen(ctx, res, focusgate.ReasonPostprocessError, err)
	}
	after, err := p.cfg.Counter.countScaled(ctx, j.tok, a.text)
	if err != nil {
		res.Ranges, res.FlaggedLines = sel.Ranges, sel.Flagged
		return p.failOpen(ctx, res, Reason(err), err)
	}
	f := finished{raw: bytes.Clone(raw), sel: sel, a: a, after: after}
	p.applieds.PutBytes(memoKey(nil, j), f, f.size())
	return p.result(f, res)
}

// result fills res in from a selection applied, keeping the result only
// if it has fewer tokens than the original.
func (p *Pruner) result(f finished, res Result) Result {
	if res.Cache == focusgate.CacheMiss {
		res.Usage = f.sel.Usage
	}
	res.Ranges, res.FlaggedLines = f.sel.Ranges, f.sel.Flagged
	if f.after >= res.TokensBefore {
		return skip(res, focusgate.ReasonNoGain)
	}
	res.Text, res.Pieces, res.Status, res.TokensAfter, res.Flagged, res.Kept = f.a.text, f.a.pieces, focusgate.StatusPruned, f.after, f.a.flagged, f.a.kept
	return res
}

// recoverPanic turns a panic into a fail-open result: the observation goes
// on unpruned.
func (p *Pruner) recoverPanic(ctx context.Context, in Input, res *Result) {
	if v := recover(); v != nil {
		p.log.LogAttrs(ctx, slog.LevelError, "prune: panic, observation sent unpruned",
			slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
		*res = Result{Text: in.Tree.Text, Status: focusgate.StatusFailedOpen, Reason: focusgate.ReasonInternalError,
			TokensBefore: res.TokensBefore, TokensAfter: res.TokensBefore}
	}
}

func skip(res Result, reason focusgate.Reason) Result {
	res.Status, res.Reason = focusgate.StatusSkipped, reason
	return res
}

func (p *Pruner) failOpen(ctx context.Context, res Result, reason focusgate.Reason, err error) Result {
	// A call cut short by its context only knows that the context ended;
	// whoever ended it (the deadline, a client that left, the shutdown)
	// names the cause on the request's own log line, so this one is a
	// detail. Any other failure is the pruner's to report.
	level := slog.LevelWarn
	if ctx.Err() != nil && (reason == focusgate.ReasonCanceled || reason == focusgate.ReasonTimeout) {
		level = slog.LevelDebug
	}
	p.log.LogAttrs(ctx, level, "prune: observation sent unpruned",
		slog.String("reason", string(reason)), slog.Any("error", err))
	res.Status, res.Reason = focusgate.StatusFailedOpen, reason
	return res
}

// Reason maps an error from a Retriever to the fail-open reason the gateway
// reports for it (Result.Reason).
func Reason(err error) focusgate.Reason {
	var status *StatusError
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return focusgate.ReasonTimeout
	case errors.Is(err, context.Canceled):
		return focusgate.ReasonCanceled
	case errors.Is(err, ErrBadAnswer):
		return focusgate.ReasonBadAnswer
	case errors.As(err, &status) && status.Code >= 500:
		return focusgate.ReasonRetrieverHTTP5xx
	case errors.As(err, &status):
		return focusgate.ReasonRetrieverHTTP4xx
	}
	return focusgate.ReasonRetrieverError
}
