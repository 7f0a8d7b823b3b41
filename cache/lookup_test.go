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
