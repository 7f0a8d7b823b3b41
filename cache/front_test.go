package cache_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/focusgate/focusgate/internal/redistest"
)

// A hot selection is served from the in-process front without a round trip,
// so it is still served while Redis is unreachable.
func TestRedisFrontServesHotSelectionsWithoutRedis(t *testing.T) {
	srv := redistest.Start(t)
	r := redistest.NewStore(t, srv.URL())
	ctx := context.Background()
	if err := r.Set(ctx, "hot", []byte("selection")); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	got, err := r.Get(ctx, "hot")
	if err != nil || !bytes.Equal(got, []byte("selection")) {
		t.Fatalf("Get = %q, %v; want the selection from the front", got, err)
	}
}
