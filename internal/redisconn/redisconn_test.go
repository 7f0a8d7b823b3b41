package redisconn

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/focusgate/focusgate/internal/redistest"
)

func TestTheTimeoutOverridesTheURLsAndNothingIsRetried(t *testing.T) {
	const timeout = 75 * time.Millisecond
	c, err := Open("redis://127.0.0.1:1/0?dial_timeout=10s&read_timeout=10s&write_timeout=10s&pool_timeout=10s&max_retries=5", false, timeout, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	o := c.(*redis.Client).Options()
	for name, got := range map[string]time.Duration{"dial": o.DialTimeout, "read": o.ReadTimeout, "write": o.WriteTimeout, "pool": o.PoolTimeout} {
		if got != timeout {
			t.Errorf("%s timeout = %v, want %v", name, got, timeout)
		}
	}
	// go-redis reads -1 as none and keeps it as 0 once the client is made.
	if o.MaxRetries > 0 {
		t.Errorf("MaxRetries = %d, want none", o.MaxRetries)
	}

	cc, err := Open("redis://127.0.0.1:1?addr=127.0.0.1:2&read_timeout=10s&max_redirects=8", true, timeout, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	co := cc.(*redis.ClusterClient).Options()
	if co.ReadTimeout != timeout || co.MaxRetries > 0 || co.MaxRedirects != 1 {
		t.Errorf("cluster: read timeout %v, retries %d, redirects %d; want %v, none, 1", co.ReadTimeout, co.MaxRetries, co.MaxRedirects, timeout)
	}
}

func TestABadURLIsAnError(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		if _, err := Open("http://example.com", cluster, time.Second, nil); err == nil {
			t.Errorf("cluster=%v: no error for an http URL", cluster)
		}
	}
}

func TestTheClientDialsThroughWrap(t *testing.T) {
	url := redistest.Shared(t)
	var dials atomic.Int32
	c, err := Open(url, false, 10*time.Second, func(d Dial) Dial {
		return func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return d(ctx, network, addr)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if dials.Load() == 0 {
		t.Error("the client did not dial through wrap")
	}
}
