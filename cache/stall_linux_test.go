package cache_test

import (
	"bytes"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/cache/cachetest"
	"github.com/focusgate/focusgate/internal/redistest"
)

// stalledReader is a connection whose reader the gateway stalls after the
// answer has arrived, as a garbage-collection pause or a CPU taken by other
// processes would: the read of the answer to a request that stalls picks
// starts only once that answer waits on the socket, and then not before
// until says.
type stalledReader struct {
	net.Conn
	stalls func(request []byte) bool
	// until returns when the stalled read may start, given when its answer
	// was seen waiting and the read's deadline.
	until func(arrived, deadline time.Time) time.Time

	mu       sync.Mutex
	deadline time.Time // the last read deadline set
	request  []byte    // written since the last read
}

func (c *stalledReader) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.request = append(c.request, b...)
	c.mu.Unlock()
	return c.Conn.Write(b)
}

func (c *stalledReader) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *stalledReader) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *stalledReader) Read(b []byte) (int, error) {
	c.mu.Lock()
	request, deadline := c.request, c.deadline
	c.request = nil
	c.mu.Unlock()
	if request != nil && c.stalls(request) {
		if err := c.awaitAnswer(deadline); err != nil {
			return 0, err
		}
		time.Sleep(time.Until(c.until(time.Now(), deadline))) // the stall itself
	}
	return c.Conn.Read(b)
}

// awaitAnswer returns once bytes wait on the socket, without reading them,
// and then restores the read deadline.
func (c *stalledReader) awaitAnswer(deadline time.Time) error {
	raw, err := c.Conn.(syscall.Conn).SyscallConn()
	if err != nil {
		return err
	}
	if err := c.Conn.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		return err
	}
	var peekErr error
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, peekErr = unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		return peekErr != unix.EAGAIN
	})
	if err == nil {
		err = peekErr
	}
	if derr := c.Conn.SetReadDeadline(deadline); err == nil {
		err = derr
	}
	return err
}

func (c *stalledReader) NetConn() net.Conn { return c.Conn }

// The gateway's own stalls are never Redis's slowness: a read whose
// goroutine runs only after its answer came, past its deadline or merely
// later than a slow round trip, neither fails the call nor counts against
// Redis, however long the stall and whichever read it hits. Stalls are
// injected between the answer's arrival and its read, so that no assertion
// depends on the machine's speed.
func TestGatewayStallsAreNotBlamedOnRedis(t *testing.T) {
	// The stalled reads' deadline, which the stalls outlast; long enough for
	// a loaded machine to dial and answer the calls that are not stalled.
	const timeout = 500 * time.Millisecond
	short := func(o *cache.RedisOptions) { o.Timeout = timeout }
	tests := []struct {
		name string
		// stalls picks the requests whose answers are read late, given the
		// key the test looks up.
		stalls func(key string) func(request []byte) bool
		until  func(arrived, deadline time.Time) time.Time
		opts   func(*cache.RedisOptions)
		gets   int
	}{
		{
			name:   "the answer to a look-up, read several timeouts past its deadline",
			stalls: requestsFor,
			until:  func(_, deadline time.Time) time.Time { return deadline.Add(5 * timeout) },
			opts:   short,
			gets:   1,
		},
		{
			name:   "a new connection's handshake, read past its deadline",
			stalls: func(string) func([]byte) bool { return handshakes },
			until:  func(_, deadline time.Time) time.Time { return deadline.Add(time.Millisecond) },
			opts:   short,
			gets:   1,
		},
		{
			name:   "answers to look-ups read later than a slow round trip, within their deadline, for longer than SlowFor",
			stalls: requestsFor,
			until:  func(arrived, _ time.Time) time.Time { return arrived.Add(2 * slowAfter) },
			opts: func(o *cache.RedisOptions) {
				o.SlowAfter = slowAfter
				o.SlowFor = time.Nanosecond // three slow round trips in a row would be enough
			},
			gets: 4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := redistest.Shared(t)
			key := testKey(t)
			if err := rawClient(t, url).Set(t.Context(), "focusgate:sel:{"+key+"}", "selection", time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			logs := &downLog{}
			r := cachetest.NewStore(t, url, neverProbed, tt.opts, func(o *cache.RedisOptions) {
				o.Logger = slog.New(logs)
				o.LogInterval = time.Nanosecond
				cache.WrapConns(o, func(c net.Conn) net.Conn {
					return &stalledReader{Conn: c, stalls: tt.stalls(key), until: tt.until}
				})
			})
			for range tt.gets {
				if val, err := r.Get(t.Context(), key); err != nil || string(val) != "selection" {
					t.Fatalf("Get = %q, %v; want the stored selection, read once the stall ended", val, err)
				}
			}
			if err := r.Status(); err != nil || logs.n.Load() != 0 {
				t.Errorf("Redis marked down (%v, %d lines) for the gateway's stall", err, logs.n.Load())
			}
			if n := r.Stats().Errors["get"]; n != 0 {
				t.Errorf("%d look-ups failed", n)
			}
		})
	}
}

// requestsFor picks the requests that name key.
func requestsFor(key string) func(request []byte) bool {
	return func(request []byte) bool { return bytes.Contains(request, []byte(key)) }
}

// handshakes picks the first request on each connection, which opens it.
func handshakes(request []byte) bool { return bytes.Contains(bytes.ToLower(request), []byte("hello")) }
