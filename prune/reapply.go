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
func (p *Pruner) Reapply(ctx context.Context, in Input) Result {
	res, _ := p.reapply(ctx, in, false)
	return res
}

// ReapplyHeld is Reapply for a page whose selection this process holds in
// memory (cache.Cache.LookupHeld): it never waits on the store. When finding
// the selection would wait (it is not in Redis's in-process front), it
// returns false and nothing that shows was done: the caller then calls
// Reapply, which repeats the preparation before it waits.
func (p *Pruner) ReapplyHeld(ctx context.Context, in Input) (Result, bool) {
	return p.reapply(ctx, in, true)
}

func (p *Pruner) reapply(ctx context.Context, in Input, heldOnly bool) (res Result, done bool) {
	// A panic leaves a result to forward, so it counts as done.
	res, done = Result{Text: in.Tree.Text}, true
	defer p.recoverPanic(ctx, in, &res)
	j, ok := p.prepare(ctx, in, &res)
	if !ok {
		return res, true
	}
	if p.cache == nil {
		return skip(res, focusgate.ReasonNotCached), true
	}
	var raw []byte
	var err error
	if heldOnly {
		raw, err = p.cache.LookupHeld(j.key)
	} else {
		raw, err = p.cache.Lookup(ctx, j.key)
	}
	if errors.Is(err, cache.ErrNotHeld) {
		return res, false
	}
	if err != nil {
		if !errors.Is(err, cache.ErrNotFound) {
			// Stores count and log their own failures; this is only the
			// observation's side of it.
			p.log.LogAttrs(ctx, slog.LevelDebug, "prune: selection look-up failed, older observation left as it is",
				slog.Any("error", err))
		}
		return skip(res, focusgate.ReasonNotCached), true
	}
	f, ok := p.remembered(j, raw)
	if ok {
		res.Cache = focusgate.CacheHit
		return p.result(f, res), true
	}
	sel, err := decodeSelection(raw)
	if err != nil {
		// Prune repairs it the next time this page is the newest.
		p.log.LogAttrs(ctx, slog.LevelDebug, "prune: stored selection does not decode, older observation left as it is",
			slog.Any("error", err))
		return skip(res, focusgate.ReasonNotCached), true
	}
	res.Cache = focusgate.CacheHit
	return p.finish(ctx, in, j, sel, raw, res), true
}
