package cache_test

import (
	"context"
	"errors"
	"testing"

	"github.com/focusgate/focusgate/cache"

	"github.com/focusgate/focusgate/cache/cachetest"
	"github.com/focusgate/focusgate/internal/redistest"
)

// Lookup finds what Fetch stored, never computes, and never waits for a
// computation in flight.
func TestLookupOnlyReadsTheStore(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			c := cache.New(st.new(t), nil)
			ctx := context.Background()
			key := testKey(t)

			if _, err := c.Lookup(ctx, key); !errors.Is(err, cache.ErrNotFound) {
				t.Fatalf("Lookup of an absent key: %v, want ErrNotFound", err)
			}

			// While a computation of key is in flight, Lookup answers at
			// once that nothing is stored yet.
			started, release := make(chan struct{}), make(chan struct{})
			done := make(chan error, 1)
			go func() {
				_, _, err := c.Fetch(ctx, key, func(context.Context) ([]byte, error) {
					close(started)
					<-release
					return []byte("selection"), nil
				})
				done <- err
			}()
			<-started
			if _, err := c.Lookup(ctx, key); !errors.Is(err, cache.ErrNotFound) {
				t.Errorf("Lookup during a computation: %v, want ErrNotFound", err)
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}

			got, err := c.Lookup(ctx, key)
			if err != nil || string(got) != "selection" {
				t.Errorf("Lookup after Fetch = %q, %v; want the stored value", got, err)
			}
		})
	}
}

// A Redis that is down is a failed look-up, not an absent value, and costs
// no wait.
func TestLookupReportsAStoreThatIsDown(t *testing.T) {
	srv := redistest.Start(t)
	r := cachetest.NewStore(t, srv.URL())
	c := cache.New(r, nil)
	srv.Stop()
	for range 2 { // the first call finds Redis down, the second skips it
		_, err := c.Lookup(context.Background(), testKey(t))
		if err == nil || errors.Is(err, cache.ErrNotFound) {
			t.Errorf("Lookup with Redis stopped: %v, want a store error", err)
		}
	}
}

// LookupHeld answers from this process's memory alone: a Memory store says
// for certain what it holds, while Redis's front can only say what it holds,
// and sends the rest to Lookup, which waits on Redis.
func TestLookupHeldAnswersFromThisProcess(t *testing.T) {
	ctx := context.Background()
	t.Run("memory", func(t *testing.T) {
		c := cache.New(cache.NewMemory(1<<20, 0), nil)
		key := testKey(t)
		if _, err := c.LookupHeld(key); !errors.Is(err, cache.ErrNotFound) {
			t.Errorf("LookupHeld of an absent key: %v, want ErrNotFound", err)
		}
		if _, _, err := c.Fetch(ctx, key, func(context.Context) ([]byte, error) { return []byte("selection"), nil }); err != nil {
			t.Fatal(err)
		}
		if got, err := c.LookupHeld(key); err != nil || string(got) != "selection" {
			t.Errorf("LookupHeld after Fetch = %q, %v; want the stored value", got, err)
		}
	})
	for _, tc := range []struct {
		name       string
		frontBytes int64
		heldAfter  bool // once Lookup has read it from Redis
	}{
		{"redis with a front", 1 << 20, true},
		{"redis without a front", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := redistest.Shared(t)
			c := cache.New(cachetest.NewStore(t, url, func(o *cache.RedisOptions) { o.FrontBytes = tc.frontBytes }), nil)
			other := cachetest.NewStore(t, url) // another replica
			key := testKey(t)
			if _, err := c.LookupHeld(key); !errors.Is(err, cache.ErrNotHeld) {
				t.Errorf("LookupHeld of an absent key: %v, want ErrNotHeld (only Redis knows)", err)
			}
			if err := other.Set(ctx, key, []byte("selection")); err != nil {
				t.Fatal(err)
			}
			if _, err := c.LookupHeld(key); !errors.Is(err, cache.ErrNotHeld) {
				t.Errorf("LookupHeld of a key another replica stored: %v, want ErrNotHeld", err)
			}
			if got, err := c.Lookup(ctx, key); err != nil || string(got) != "selection" {
				t.Fatalf("Lookup = %q, %v; want the value from Redis", got, err)
			}
			got, err := c.LookupHeld(key)
			if held := err == nil && string(got) == "selection"; held != tc.heldAfter {
				t.Errorf("LookupHeld after Lookup = %q, %v; want held: %v", got, err, tc.heldAfter)
			}
			if !tc.heldAfter && !errors.Is(err, cache.ErrNotHeld) {
				t.Errorf("LookupHeld without a front = %v, want ErrNotHeld", err)
			}
		})
	}
}
