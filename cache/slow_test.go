package cache_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/internal/redistest"
)

// slowProxy relays TCP to addr, holding back each reply from the server by
// delay: a Redis that answers, but slowly.
func slowProxy(t testing.TB, addr string, delay time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", addr)
			if err != nil {
				client.Close()
				continue
			}
			go func() { io.Copy(server, client); server.Close() }()
			go func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := server.Read(buf)
					if n > 0 {
						time.Sleep(delay) // the point of the proxy: a slow reply
						if _, werr := client.Write(buf[:n]); werr != nil {
							break
						}
					}
					if err != nil {
						break
					}
				}
				client.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

// A Redis that answers every call, but slowly, costs each request most of
// the timeout without ever failing: after a few slow calls in a row it is
// treated as down, skipped, and requests go on uncached.
func TestSlowRedisIsTreatedAsDown(t *testing.T) {
	srv := redistest.Start(t)
	addr := strings.TrimSuffix(strings.TrimPrefix(srv.URL(), "redis://"), "/0")
	r := redistest.NewStore(t, "redis://"+slowProxy(t, addr, 100*time.Millisecond)+"/0", func(o *cache.RedisOptions) {
		o.SlowAfter = 50 * time.Millisecond
		o.ProbeInterval = time.Hour // the test watches the calls, not the probe
	})
	ctx := t.Context()
	for range 3 {
		if _, err := r.Get(ctx, testKey(t)); err != nil && !errors.Is(err, cache.ErrNotFound) {
			break
		}
	}
	if s := r.Stats(); s.Up {
		t.Fatalf("three slow calls in a row, and Redis is still up: %+v", s)
	}
	before := r.Stats().Skipped
	if _, err := r.Get(ctx, testKey(t)); err == nil {
		t.Error("a call went to a Redis known to be too slow")
	}
	if r.Stats().Skipped != before+1 {
		t.Error("the call was not skipped")
	}
}

// A stored value of megabytes is not read: a selection is kilobytes. The
// caller computes it again and stores it in its place; Redis is not blamed.
func TestHugeStoredValuesAreNotRead(t *testing.T) {
	url := redistest.Shared(t)
	r := redistest.NewStore(t, url)
	raw := rawClient(t, url)
	key := testKey(t)
	if err := raw.Set(t.Context(), "focusgate:sel:{"+key+"}", bytes.Repeat([]byte("x"), 3<<20), time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(t.Context(), key); err == nil || errors.Is(err, cache.ErrNotFound) {
		t.Fatalf("Get of a 3 MB value: %v, want an error", err)
	}
	val, _, err := cache.New(r, nil).Fetch(t.Context(), key, func(context.Context) ([]byte, error) { return []byte("selection"), nil })
	if err != nil || string(val) != "selection" {
		t.Fatalf("Fetch = %q, %v", val, err)
	}
	if got, err := r.Get(t.Context(), key); err != nil || string(got) != "selection" {
		t.Errorf("after Fetch: %q, %v; want the computed value in its place", got, err)
	}
	if !r.Stats().Up {
		t.Error("a huge value marked Redis down")
	}
}
