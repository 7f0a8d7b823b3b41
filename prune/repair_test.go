package prune

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/cache/cachetest"
	"github.com/focusgate/focusgate/internal/redistest"
)

// keyRecorder remembers the keys written to a store, so that a test can
// damage what was written.
type keyRecorder struct {
	cache.Store
	mu   sync.Mutex
	keys []string
}

func (s *keyRecorder) Set(ctx context.Context, key string, val []byte) error {
	s.mu.Lock()
	s.keys = append(s.keys, key)
	s.mu.Unlock()
	return s.Store.Set(ctx, key, val)
}

// Delete passes deletions on; the embedded Store interface hides them.
func (s *keyRecorder) Delete(ctx context.Context, key string) error {
	return s.Store.(interface {
		Delete(context.Context, string) error
	}).Delete(ctx, key)
}

// A stored selection that does not decode is deleted and computed again, in
// every store, instead of failing every request for the page until it
// expires.
func TestUndecodableCachedSelectionIsRecomputed(t *testing.T) {
	stores := []struct {
		name string
		new  func(t *testing.T) cache.Store
	}{
		{"memory", func(*testing.T) cache.Store { return cache.NewMemory(1<<20, time.Hour) }},
		{"redis", func(t *testing.T) cache.Store { return cachetest.NewStore(t, redistest.Shared(t)) }},
	}
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			store := &keyRecorder{Store: s.new(t)}
			var calls atomic.Int32
			r := retrieverFunc(func(_ context.Context, q Query) (Selection, error) {
				calls.Add(1)
				return ParseAnswer("<answer>[(1,3), (20,25)]</answer>", q.Lines)
			})
			// A model name of its own keeps the key apart on a shared Redis.
			p := New(Config{MinTokens: 1000, RetrieverModel: t.Name() + time.Now().String()}, r, cache.New(store, nil))
			in := laptopInput(t)
			ctx := t.Context()

			if res := p.Prune(ctx, in); res.Status != focusgate.StatusPruned || res.Cache != focusgate.CacheMiss {
				t.Fatalf("first request: %s %s (%s)", res.Status, res.Cache, res.Reason)
			}
			if len(store.keys) != 1 {
				t.Fatalf("%d values stored, want 1", len(store.keys))
			}
			key := store.keys[0]
			if err := store.Store.Set(ctx, key, []byte("\x00 not a selection")); err != nil {
				t.Fatal(err)
			}

			res := p.Prune(ctx, in)
			if res.Status != focusgate.StatusPruned || res.Cache != focusgate.CacheMiss {
				t.Errorf("request after the damage: %s %s (%s), want pruned by a new retriever call", res.Status, res.Cache, res.Reason)
			}
			if n := calls.Load(); n != 2 {
				t.Errorf("retriever called %d times, want 2", n)
			}
			val, err := store.Get(ctx, key)
			if err != nil || !json.Valid(val) {
				t.Errorf("the store holds %q (%v), want the recomputed selection", val, err)
			}
			if res := p.Prune(ctx, in); res.Status != focusgate.StatusPruned || res.Cache != focusgate.CacheHit {
				t.Errorf("third request: %s %s, want a hit on the repaired value", res.Status, res.Cache)
			}
		})
	}
}
