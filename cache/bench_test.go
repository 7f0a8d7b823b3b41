package cache_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/cache/cachetest"
	"github.com/focusgate/focusgate/internal/redistest"
)

// productionTimeouts undoes cachetest.NewStore's test-friendly settings, so that
// benchmarks measure what a gateway pays.
func productionTimeouts(o *cache.RedisOptions) {
	o.Timeout = 0
	o.ProbeInterval = 0
}

// BenchmarkFetch measures the latency Fetch adds to a request, per store and
// Redis state.
func BenchmarkFetch(b *testing.B) {
	sel := make([]byte, 256) // a selection: line ranges and token usage
	compute := func(context.Context) ([]byte, error) { return sel, nil }
	run := func(b *testing.B, c *cache.Cache, key string, want focusgate.CacheOutcome) {
		b.Helper()
		ctx := b.Context()
		for b.Loop() {
			if _, out, err := c.Fetch(ctx, key, compute); err != nil || out != want {
				b.Fatalf("Fetch = %q, %v; want %q", out, err, want)
			}
		}
	}

	b.Run("memory-hit", func(b *testing.B) {
		c := cache.New(cache.NewMemory(64<<20, time.Hour), nil)
		key := testKey(b)
		if err := c.Store().Set(b.Context(), key, sel); err != nil {
			b.Fatal(err)
		}
		run(b, c, key, focusgate.CacheHit)
	})

	b.Run("redis-hit", func(b *testing.B) {
		r := cachetest.NewStore(b, redistest.Start(b).URL(), productionTimeouts)
		key := testKey(b)
		if err := r.Set(b.Context(), key, sel); err != nil {
			b.Fatal(err)
		}
		run(b, cache.New(r, nil), key, focusgate.CacheHit)
	})

	// Redis is known to be down: every call is skipped and the value computed.
	b.Run("redis-down-skipped", func(b *testing.B) {
		srv := redistest.Start(b)
		r := cachetest.NewStore(b, srv.URL(), productionTimeouts)
		srv.Stop()
		waitFor(b, "the probe to find Redis down", func() bool { return r.Status() != nil })
		run(b, cache.New(r, nil), testKey(b), focusgate.CacheMiss)
	})

	// Redis was killed and this is the first call to find out, in every
	// iteration: the connection is refused at once.
	b.Run("redis-killed-unnoticed", func(b *testing.B) {
		srv := redistest.Start(b)
		r := cachetest.NewStore(b, srv.URL(), productionTimeouts)
		c := cache.New(r, nil)
		key := testKey(b)
		srv.Stop()
		ctx := b.Context()
		for b.Loop() {
			r.MarkUp()
			if _, out, err := c.Fetch(ctx, key, compute); err != nil || out != focusgate.CacheMiss {
				b.Fatalf("Fetch = %q, %v; want a miss", out, err)
			}
		}
	})

	// The Redis host accepts connections but never answers, as a hung or
	// overloaded server would, and this is the first call to find out: it
	// costs the short timeout, no more.
	b.Run("redis-unresponsive-unnoticed", func(b *testing.B) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { l.Close() })
		r := cachetest.NewStore(b, "redis://"+l.Addr().String()+"/0", productionTimeouts)
		c := cache.New(r, nil)
		key := testKey(b)
		ctx := b.Context()
		for b.Loop() {
			r.MarkUp()
			if _, out, err := c.Fetch(ctx, key, compute); err != nil || out != focusgate.CacheMiss {
				b.Fatalf("Fetch = %q, %v; want a miss", out, err)
			}
		}
	})
}
