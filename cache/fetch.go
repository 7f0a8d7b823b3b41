package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/focusgate/focusgate"
)

// claimer is implemented by stores that several replicas share, so that one
// replica computes a missing value while the others wait for it.
type claimer interface {
	// claim returns either the value, once another replica has stored it, or
	// a non-nil release when this caller has the right to compute it. The
	// caller must call release once, when the computation ends: with the
	// value, which release stores, or with nil when it failed. An error means
	// coordination is unavailable and the caller computes alone.
	claim(ctx context.Context, key string) (val []byte, release func(val []byte), err error)
}

// holder is implemented by stores that can answer from this process's memory
// without waiting: Memory, and Redis through its front. Fetch asks it on the
// caller's goroutine before it starts a flight, so that a hit costs no
// goroutine and no hand-off between goroutines, which on a busy host cost more
// than the look-up itself.
type holder interface {
	// held returns the value stored under key when it is in memory here;
	// else ErrNotFound when the store is this memory, so that nothing is
	// stored under key, or ErrNotHeld when the store may hold it elsewhere.
	held(key string) ([]byte, error)
}

var (
	_ holder  = (*Memory)(nil)
	_ holder  = (*Redis)(nil)
	_ claimer = (*Redis)(nil)
	_ Store   = (*Redis)(nil)
	_ Store   = (*Memory)(nil)
	_ deleter = (*Redis)(nil)
	_ deleter = (*Memory)(nil)
)

// Cache is a get-or-compute front for a Store: a value is computed at most
// once per key while it stays stored, and identical concurrent Fetch calls
// share one computation. The zero value is not usable; call New.
type Cache struct {
	store   Store
	claimer claimer // nil unless the store is shared between replicas
	holder  holder  // nil unless the store can answer without waiting
	log     *slog.Logger

	mu      sync.Mutex
	flights map[string]*flight
}

// flight is one get-or-compute in progress, shared by every Fetch of its key
// that arrives before it ends.
type flight struct {
	done    chan struct{} // closed once val, outcome and err are final
	val     []byte
	outcome focusgate.CacheOutcome
	err     error

	waiters int                // callers still waiting; guarded by Cache.mu
	cancel  context.CancelFunc // ends the computation when waiters drops to 0
}

// New returns a Cache over store. When store is shared between replicas
// (Redis), a missing value is also computed only once across replicas. A nil
// logger means slog.Default().
func New(store Store, logger *slog.Logger) *Cache {
	if logger == nil {
		logger = slog.Default()
	}
	c := &Cache{store: store, log: logger, flights: make(map[string]*flight)}
	c.claimer, _ = store.(claimer)
	c.holder, _ = store.(holder)
	return c
}

// Fetch returns the value stored under key, or computes, stores and returns
// it. Identical concurrent calls share one computation; the Outcome tells each
// caller whether the value was stored (focusgate.CacheHit), computed for it (focusgate.CacheMiss) or
// computed for another caller while it waited (focusgate.CacheShared).
//
// compute runs with a context that keeps ctx's values but not its deadline or
// cancellation, because a caller that gives up must not fail the others: the
// context is cancelled only when every waiting caller has given up, so compute
// should bound its own running time. A caller whose ctx ends gets ctx.Err() at
// once.
//
// The store's failures are never returned, since a cache must not be the
// reason a request fails: the value is then computed and returned uncached.
// When compute fails, the Outcome still says who paid for the attempt (CacheMiss
// or CacheShared); it is empty when the caller gave up or the store's
// coordination failed before computing. The returned slice is
// shared with other callers and must not be modified.
func (c *Cache) Fetch(ctx context.Context, key string, compute func(context.Context) ([]byte, error)) ([]byte, focusgate.CacheOutcome, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	if c.holder != nil {
		if val, err := c.holder.held(key); err == nil {
			return val, focusgate.CacheHit, nil
		}
	}
	c.mu.Lock()
	f, joined := c.flights[key]
	if !joined {
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight{done: make(chan struct{}), cancel: cancel}
		c.flights[key] = f
		go c.run(fctx, key, f, compute)
	}
	f.waiters++
	c.mu.Unlock()

	select {
	case <-f.done:
		if joined && f.outcome == focusgate.CacheMiss {
			return f.val, focusgate.CacheShared, f.err
		}
		return f.val, f.outcome, f.err
	case <-ctx.Done():
		c.leave(key, f)
		return nil, "", ctx.Err()
	}
}

// Delete forgets the value stored under key, for a caller that found it
// unusable (it does not decode): the next Fetch computes it again instead of
// every request failing on it until it expires. Stores that cannot delete
// ignore it. Like every store failure, a failed delete is only logged by the
// store.
func (c *Cache) Delete(ctx context.Context, key string) {
	if d, ok := c.store.(deleter); ok {
		_ = d.Delete(ctx, key)
	}
}

// leave withdraws a caller from f and cancels f once nobody waits for it, so
// that a client that disconnects stops its retriever call unless another
// caller still wants the result.
func (c *Cache) leave(key string, f *flight) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f.waiters--
	if f.waiters > 0 {
		return
	}
	f.cancel()
	// A later Fetch must start afresh rather than join a cancelled flight.
	if c.flights[key] == f {
		delete(c.flights, key)
	}
}

func (c *Cache) run(ctx context.Context, key string, f *flight, compute func(context.Context) ([]byte, error)) {
	defer func() {
		// compute runs on this goroutine, out of reach of the caller's own
		// panic recovery: turn a panic into an error so that the request goes
		// on uncached instead of taking the process down.
		if p := recover(); p != nil {
			c.log.Error("cache: compute panicked", "key", key, "panic", p, "stack", string(debug.Stack()))
			f.val, f.outcome, f.err = nil, "", fmt.Errorf("cache: compute panicked: %v", p)
		}
		c.mu.Lock()
		if c.flights[key] == f {
			delete(c.flights, key)
		}
		c.mu.Unlock()
		f.cancel()
		close(f.done)
	}()
	f.val, f.outcome, f.err = c.getOrCompute(ctx, key, compute)
}

func (c *Cache) getOrCompute(ctx context.Context, key string, compute func(context.Context) ([]byte, error)) ([]byte, focusgate.CacheOutcome, error) {
	val, err := c.store.Get(ctx, key)
	if err == nil {
		return val, focusgate.CacheHit, nil
	}
	lookErr := err
	// Coordinate only on a clean miss: a store that just failed is unlikely
	// to coordinate either.
	var release func([]byte)
	if c.claimer != nil && errors.Is(err, ErrNotFound) {
		var shared []byte
		shared, release, err = c.claimer.claim(ctx, key)
		switch {
		case release != nil:
		case err == nil:
			return shared, focusgate.CacheShared, nil
		case ctx.Err() != nil:
			return nil, "", ctx.Err()
		}
		// Otherwise coordination failed: computing alone costs at most one
		// duplicate computation, waiting could cost the request.
	}
	if release != nil {
		// Deferred, so that a compute that panics frees the lock too.
		var stored []byte
		defer func() { release(stored) }()
		val, err = compute(ctx)
		if err != nil {
			return nil, focusgate.CacheMiss, err
		}
		// The release stores the value, even if every caller left
		// meanwhile: it has been paid for.
		stored = val
		return val, focusgate.CacheMiss, nil
	}
	val, err = compute(ctx)
	if err != nil {
		return nil, focusgate.CacheMiss, err
	}
	// The value has been paid for, so it is stored even if every caller left
	// meanwhile; but not in a store whose look-up just timed out, as asking
	// it again would likely cost the request a second timeout. Stores count
	// and log their own failures.
	if !timedOut(lookErr) {
		_ = c.store.Set(context.WithoutCancel(ctx), key, val)
	}
	return val, focusgate.CacheMiss, nil
}
