package prune

import (
	"context"
	"errors"
	"log/slog"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
)

// Reapply prunes an observation that is no longer the newest of its
// conversation exactly as Prune pruned it when it was: with the selection
// stored under the same key, applied in in.Mode, and kept only if it has
// fewer tokens. It never asks the retriever and makes one cache look-up, so
// that every older page of a conversation reaches the action model
// byte-identical from one request to the next and the provider's prefix
// cache keeps hitting.
//
// With the same Input as the earlier Prune (same tree, goal, history, mode,
// variant and model) the Text is byte-identical to what Prune returned.
// When nothing is stored, or the store fails, the original goes on with
// Status StatusSkipped and Reason ReasonNotCached; Cache is CacheHit only when a selection was
// found.
func (p *Pruner) Reapply(ctx context.Context, in Input) (res Result) {
	res = Result{Text: in.Tree.Text}
	defer p.recoverPanic(ctx, in, &res)
	j, ok := p.prepare(ctx, in, &res)
	if !ok {
		return res
	}
	if p.cache == nil {
		return skip(res, focusgate.ReasonNotCached)
	}
	raw, err := p.cache.Lookup(ctx, j.key)
	if err != nil {
		if !errors.Is(err, cache.ErrNotFound) {
			// Stores count and log their own failures; this is only the
			// observation's side of it.
			p.log.LogAttrs(ctx, slog.LevelDebug, "prune: selection look-up failed, older observation left as it is",
				slog.Any("error", err))
		}
		return skip(res, focusgate.ReasonNotCached)
	}
	memoKey, f, ok := p.remembered(in, j, raw)
	if ok {
		res.Cache = focusgate.CacheHit
		return p.result(f, res)
	}
	sel, err := decodeSelection(raw)
	if err != nil {
		// Prune repairs it the next time this page is the newest.
		p.log.LogAttrs(ctx, slog.LevelDebug, "prune: stored selection does not decode, older observation left as it is",
			slog.Any("error", err))
		return skip(res, focusgate.ReasonNotCached)
	}
	res.Cache = focusgate.CacheHit
	return p.finish(ctx, in, j, sel, memoKey, res)
}
