package cache_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/cache/cachetest"
	"github.com/focusgate/focusgate/internal/redistest"
)

// A hot selection is served from the in-process front without a round trip,
// so it is still served while Redis is unreachable; with the front turned
// off the same read goes to Redis and fails.
func TestRedisFrontServesHotSelectionsWithoutRedis(t *testing.T) {
	for _, tc := range []struct {
		name       string
		frontBytes int64
		wantHit    bool
	}{
		{"front", 0, true},
		{"no front", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			r := cachetest.NewStore(t, srv.URL(), func(o *cache.RedisOptions) { o.FrontBytes = tc.frontBytes })
			ctx := context.Background()
			if err := r.Set(ctx, "hot", []byte("selection")); err != nil {
				t.Fatal(err)
			}
			srv.Stop()
			got, err := r.Get(ctx, "hot")
			if hit := err == nil && bytes.Equal(got, []byte("selection")); hit != tc.wantHit {
				t.Fatalf("Get = %q, %v; want a hit from the front: %v", got, err, tc.wantHit)
			}
		})
	}
}

// BenchmarkRedisGetSlowReplies reads a hot selection from a Redis whose
// replies are held back by 40 ms (the probe's slow Redis), with and without
// the in-process front.
func BenchmarkRedisGetSlowReplies(b *testing.B) {
	srv := redistest.Start(b)
	u, err := url.Parse(srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	u.Host = slowProxy(b, u.Host, 40*time.Millisecond)
	for _, front := range []int64{-1, 0} {
		b.Run(fmt.Sprintf("front=%v", front == 0), func(b *testing.B) {
			r := cachetest.NewStore(b, u.String(), func(o *cache.RedisOptions) { o.FrontBytes = front })
			ctx := context.Background()
			if err := r.Set(ctx, "hot", bytes.Repeat([]byte("7,"), 200)); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := r.Get(ctx, "hot"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
