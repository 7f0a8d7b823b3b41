package cache_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/cache/cachetest"
	"github.com/focusgate/focusgate/internal/redistest"
)

// slowProxy relays TCP to addr, holding back each reply from the server by
// delay: a Redis that answers, but slowly.
func slowProxy(t testing.TB, addr string, delay time.Duration) string {
	t.Helper()
	var d atomic.Int64
	d.Store(int64(delay))
	return delayProxy(t, addr, &d)
}

// delayProxy relays TCP to addr, holding back each reply from the server by
// the delay it reads from delay at that moment, so that a test can make
// Redis slow and fast again.
func delayProxy(t testing.TB, addr string, delay *atomic.Int64) string {
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
						time.Sleep(time.Duration(delay.Load())) // the point of the proxy: a slow reply
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

// hostPort returns the host:port of a redis:// URL.
func hostPort(t testing.TB, redisURL string) string {
	t.Helper()
	u, err := url.Parse(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// slowAfter is a round trip surely slow, and yet short enough for a test:
// a healthy local Redis answers well within it even on a loaded machine.
const slowAfter = 200 * time.Millisecond

// Redis is judged slow by its round trips over a while, not by a few of
// them: a Redis slow for longer than SlowFor, every round trip slow, is
// treated as down (skipped, and requests go on uncached), since it costs
// each request most of the timeout without ever failing; a burst of slow
// replies, as a host too busy to read them in time produces, is not.
func TestRedisIsSlowWhenEveryRoundTripIsSlowForAWhile(t *testing.T) {
	tests := []struct {
		name    string
		slowFor time.Duration
		// round trips in sequence, each a list of concurrent calls, slow or not
		calls    [][]bool
		wantDown bool
	}{
		{
			name:     "every round trip slow for longer than SlowFor",
			slowFor:  2 * slowAfter,
			calls:    [][]bool{{true}, {true}, {true}, {true}},
			wantDown: true,
		},
		{
			name:     "a burst of concurrent slow replies, then a fast one",
			slowFor:  time.Hour,
			calls:    [][]bool{{true, true, true, true, true}, {false}},
			wantDown: false,
		},
		{
			name:     "slow round trips for longer than SlowFor, each run broken by a fast one",
			slowFor:  10 * slowAfter, // a run lasts about 0.6 s; the three, 2.7 s
			calls:    [][]bool{{true}, {true}, {true}, {false}, {true}, {true}, {true}, {false}, {true}, {true}, {true}, {false}},
			wantDown: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			var delay atomic.Int64
			r := cachetest.NewStore(t, "redis://"+delayProxy(t, hostPort(t, srv.URL()), &delay)+"/0", neverProbed, func(o *cache.RedisOptions) {
				o.SlowAfter = slowAfter
				o.SlowFor = tt.slowFor
			})
			ctx := t.Context()
			waitFor(t, "the first probe", func() bool { return calls(t, rawClient(t, srv.URL()), "ping") == startPings+1 })
			for _, step := range tt.calls {
				delay.Store(0)
				if step[0] {
					delay.Store(int64(slowAfter * 3 / 2))
				}
				errs := make(chan error, len(step))
				for range step {
					go func() {
						_, err := r.Get(ctx, testKey(t))
						errs <- err
					}()
				}
				for range step {
					if err := receive(t, errs); err != nil && !errors.Is(err, cache.ErrNotFound) {
						t.Logf("Get: %v", err)
					}
				}
			}
			if down := r.Status() != nil; down != tt.wantDown {
				t.Fatalf("Redis marked down: %v, want %v (%+v)", down, tt.wantDown, r.Stats())
			}
			if !tt.wantDown {
				return
			}
			before := r.Stats().Skipped
			if _, err := r.Get(ctx, testKey(t)); err == nil {
				t.Error("a call went to a Redis known to be too slow")
			}
			if r.Stats().Skipped != before+1 {
				t.Error("the call was not skipped")
			}
		})
	}
}

// Waiting for one of the client's pooled connections is the gateway's own
// queue, not Redis's slowness: calls that waited longer than SlowAfter for
// a connection, and then had a fast round trip, leave Redis up.
func TestWaitingForAConnectionIsNotRedisSlowness(t *testing.T) {
	srv := redistest.Start(t)
	raw := rawClient(t, srv.URL())
	r := cachetest.NewStore(t, srv.URL()+"?pool_size=1", neverProbed, func(o *cache.RedisOptions) {
		o.SlowAfter = slowAfter
		o.SlowFor = time.Nanosecond // three slow calls in a row would be enough
	})
	ctx := t.Context()
	waitFor(t, "the first probe", func() bool { return calls(t, raw, "ping") == startPings+1 })

	// The client's only connection waits on a list until the test pushes.
	gate := "gate:" + testKey(t)
	blocked := make(chan error, 1)
	go func() { blocked <- r.Client().BLPop(ctx, 0, gate).Err() }()
	waitFor(t, "the connection to block", func() bool {
		return strings.Contains(raw.Info(ctx, "clients").Val(), "blocked_clients:1")
	})
	start := time.Now()
	const waiting = 3
	errs := make(chan error, waiting)
	for range waiting {
		go func() {
			_, err := r.Get(ctx, testKey(t))
			errs <- err
		}()
	}
	waitFor(t, "the calls to wait for the connection, longer than SlowAfter", func() bool {
		return r.Client().PoolStats().PendingRequests == waiting && time.Since(start) > slowAfter
	})
	if err := raw.LPush(ctx, gate, "go").Err(); err != nil {
		t.Fatal(err)
	}
	if err := receive(t, blocked); err != nil {
		t.Fatal(err)
	}
	for range waiting {
		if err := receive(t, errs); !errors.Is(err, cache.ErrNotFound) {
			t.Errorf("Get = %v, want ErrNotFound", err)
		}
	}
	if err := r.Status(); err != nil {
		t.Errorf("Redis marked down for the wait for a connection: %v", err)
	}
}

// A stored value of megabytes is not read: a selection is kilobytes. The
// caller computes it again and stores it in its place; Redis is not blamed.
func TestHugeStoredValuesAreNotRead(t *testing.T) {
	url := redistest.Shared(t)
	r := cachetest.NewStore(t, url)
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

// stallProxy relays TCP to addr; replies on the connections that stalled
// picks (numbered from 1 in the order accepted) are never delivered, as
// from a server that stopped answering them. Each request that reaches the
// server on a stalled connection is reported on requests.
type stallProxy struct {
	addr     string
	stalled  func(conn int) bool
	requests chan int
}

func startStallProxy(t testing.TB, addr string, stalled func(conn int) bool) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &stallProxy{addr: ln.Addr().String(), stalled: stalled, requests: make(chan int, 64)}
	go func() {
		for n := 1; ; n++ {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", addr)
			if err != nil {
				client.Close()
				continue
			}
			go func() {
				buf := make([]byte, 32<<10)
				for {
					k, err := client.Read(buf)
					if k > 0 {
						if p.stalled(n) {
							select {
							case p.requests <- n:
							default:
							}
						}
						if _, err := server.Write(buf[:k]); err != nil {
							break
						}
					}
					if err != nil {
						break
					}
				}
				server.Close()
			}()
			go func() {
				buf := make([]byte, 32<<10)
				for {
					k, err := server.Read(buf)
					if k > 0 && !p.stalled(n) {
						if _, err := client.Write(buf[:k]); err != nil {
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
	return p
}

// downLog counts the log lines of a store that say Redis was marked down.
type downLog struct{ n atomic.Int32 }

func (*downLog) Enabled(context.Context, slog.Level) bool { return true }
func (d *downLog) WithAttrs([]slog.Attr) slog.Handler     { return d }
func (d *downLog) WithGroup(string) slog.Handler          { return d }
func (d *downLog) Handle(_ context.Context, rec slog.Record) error {
	if strings.Contains(rec.Message, "while it is down") {
		d.n.Add(1)
	}
	return nil
}

// probed waits until the store's first probe is over and its connection
// back in the pool: the server counting the PING is not enough, as the
// answer may still be on its way, and a test that then stops the answers
// would lose it.
func probed(t *testing.T, r *cache.Redis) {
	t.Helper()
	waitFor(t, "the first probe", func() bool { return r.Client().PoolStats().IdleConns == 1 })
}

// A call that times out goes uncached, and alone does not mark Redis down:
// a read whose answer did not come while the server answered other calls,
// or a wait for a pooled connection (the gateway's own queue), leaves Redis
// in use. A Redis that answers nothing is marked down once its calls have
// timed out for SlowFor, and then skipped.
func TestTimeoutsAloneLeaveRedisUp(t *testing.T) {
	// Timeouts happen for real here, so the timeout is short; still long
	// enough for a loaded machine to answer the calls meant to succeed.
	const timeout = time.Second
	store := func(t *testing.T, url string, configure ...func(*cache.RedisOptions)) (*cache.Redis, *downLog) {
		logs := &downLog{}
		r := cachetest.NewStore(t, url, append([]func(*cache.RedisOptions){neverProbed, func(o *cache.RedisOptions) {
			o.Timeout = timeout
			o.Logger = slog.New(logs)
			o.LogInterval = time.Nanosecond
		}}, configure...)...)
		return r, logs
	}

	t.Run("read timed out while another connection was answered", func(t *testing.T) {
		srv := redistest.Start(t)
		// The store's first connection, that of its first probe, stops
		// being answered once the probe is done.
		var stalled atomic.Bool
		p := startStallProxy(t, hostPort(t, srv.URL()), func(conn int) bool { return conn == 1 && stalled.Load() })
		r, logs := store(t, "redis://"+p.addr+"/0")
		probed(t, r)
		stalled.Store(true)

		errs := make(chan error, 1)
		go func() { _, err := r.Get(t.Context(), testKey(t)); errs <- err }()
		receive(t, p.requests) // on the idle connection, which is stalled
		if _, err := r.Get(t.Context(), testKey(t)); !errors.Is(err, cache.ErrNotFound) {
			t.Fatalf("Get on a second connection = %v, want ErrNotFound", err)
		}
		if err := receive(t, errs); err == nil || !strings.Contains(err.Error(), "timeout") {
			t.Fatalf("Get on the stalled connection = %v, want a timeout", err)
		}
		if err := r.Status(); err != nil || logs.n.Load() != 0 {
			t.Errorf("Redis marked down (%v, %d lines) for a timeout while it answered others", err, logs.n.Load())
		}
		if n := r.Stats().Errors["get"]; n != 1 {
			t.Errorf("get errors = %d, want the timeout counted", n)
		}
	})

	t.Run("wait for a pooled connection timed out", func(t *testing.T) {
		srv := redistest.Start(t)
		raw := rawClient(t, srv.URL())
		r, logs := store(t, srv.URL()+"?pool_size=1")
		probed(t, r)
		gate := "gate:" + testKey(t)
		blocked := make(chan error, 1)
		go func() { blocked <- r.Client().BLPop(t.Context(), 0, gate).Err() }()
		waitFor(t, "the only connection to block", func() bool {
			return strings.Contains(raw.Info(t.Context(), "clients").Val(), "blocked_clients:1")
		})
		if _, err := r.Get(t.Context(), testKey(t)); !errors.Is(err, redis.ErrPoolTimeout) {
			t.Fatalf("Get = %v, want a pool timeout", err)
		}
		if err := r.Status(); err != nil || logs.n.Load() != 0 {
			t.Errorf("Redis marked down (%v, %d lines) for the gateway's own queue", err, logs.n.Load())
		}
		raw.LPush(t.Context(), gate, "go")
		receive(t, blocked)
	})

	t.Run("calls timed out for SlowFor while Redis answered nothing", func(t *testing.T) {
		srv := redistest.Start(t)
		var stalled atomic.Bool
		p := startStallProxy(t, hostPort(t, srv.URL()), func(int) bool { return stalled.Load() })
		r, logs := store(t, "redis://"+p.addr+"/0", func(o *cache.RedisOptions) {
			o.SlowFor = time.Nanosecond // the fewest timeouts in a row then mark Redis down
		})
		probed(t, r)
		stalled.Store(true)

		c := cache.New(r, nil)
		compute := func(context.Context) ([]byte, error) { return []byte("selection"), nil }
		for i := 1; r.Status() == nil; i++ {
			if i > 3 {
				t.Fatalf("Redis that answers nothing still up after %d timed-out look-ups", i-1)
			}
			if val, out, err := c.Fetch(t.Context(), testKey(t), compute); err != nil || out != focusgate.CacheMiss || string(val) != "selection" {
				t.Fatalf("Fetch = %q, %q, %v; want the value computed, uncached", val, out, err)
			}
		}
		if n := logs.n.Load(); n != 1 {
			t.Errorf("%d lines said Redis was marked down, want 1", n)
		}
		if s := r.Stats(); s.Errors["get"] == 0 || s.Errors["set"] != 0 {
			t.Errorf("errors %v: want look-ups timed out, and no store tried after them, which would cost a second timeout", s.Errors)
		}
		before := r.Stats().Skipped
		if _, err := r.Get(t.Context(), testKey(t)); err == nil || r.Stats().Skipped != before+1 {
			t.Errorf("Get on a Redis marked down = %v, want it skipped", err)
		}
	})
}
