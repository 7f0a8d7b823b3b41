package cache

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// slowness tells a Redis that is slow from a gateway that is. A Redis that
// answers every call, but slowly, costs each request most of the timeout
// without ever failing, so it is better skipped; but a gateway that is
// itself short of CPU makes round trips look slow too, in bursts: every call
// in flight during a stall at once. So Redis is judged slow only when every
// round trip has been slow for a span of time, with at least slowCalls of
// them; one round trip in time ends the run.
type slowness struct {
	after time.Duration // a round trip longer than this is slow
	span  time.Duration // how long a run of slow round trips must last

	running atomic.Bool // a run of slow round trips is under way
	mu      sync.Mutex
	since   time.Time // when the run's first slow round trip ended; guarded by mu
	n       int       // slow round trips in the run; guarded by mu
}

// observe records a round trip that took rtt and ended at now, and reports
// whether it completes a run long enough to call Redis slow; the run then
// starts afresh. Round trips in time, the common case, take no lock.
func (s *slowness) observe(rtt time.Duration, now time.Time) bool {
	if rtt <= s.after {
		if s.running.Load() {
			s.mu.Lock()
			s.running.Store(false)
			s.mu.Unlock()
		}
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running.Load() {
		s.running.Store(true)
		s.since, s.n = now, 0
	}
	s.n++
	if s.n < slowCalls || now.Sub(s.since) < s.span {
		return false
	}
	s.running.Store(false)
	return true
}

// timedDialer wraps dial so that every connection it makes reports its
// round trips to observe.
func timedDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error), observe func(time.Duration)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := &timedConn{Conn: conn, observe: observe}
		// go-redis checks an idle connection's health through its file
		// descriptor before reusing it; hiding it would hand a dead
		// connection to the next call, which would fail and mark Redis down.
		if sc, ok := conn.(syscall.Conn); ok {
			return &timedSyscallConn{timedConn: tc, sc: sc}, nil
		}
		return tc, nil
	}
}

// epoch is the origin of the monotonic times timedConn keeps in an integer.
var epoch = time.Now()

// timedConn times each round trip on a connection: from the moment a
// request is written after the last answer to the first read that returns
// bytes of the next answer. A call's wait for a pooled connection and the
// client's own work are outside it. Reads that no write preceded (pub/sub
// messages) are not round trips and are not timed.
type timedConn struct {
	net.Conn
	observe func(time.Duration)
	// sent is when the request awaiting its answer was written, as
	// nanoseconds since epoch plus one; 0 when no answer is awaited. Atomic:
	// a pub/sub connection reads on one goroutine and writes on another.
	sent atomic.Int64
}

func (c *timedConn) Write(b []byte) (int, error) {
	if c.sent.Load() == 0 {
		c.sent.CompareAndSwap(0, int64(time.Since(epoch))+1)
	}
	return c.Conn.Write(b)
}

func (c *timedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		if sent := c.sent.Swap(0); sent != 0 {
			c.observe(time.Since(epoch) - time.Duration(sent-1))
		}
	}
	return n, err
}

// NetConn returns the wrapped connection, as crypto/tls.Conn does, for code
// that looks through wrappers.
func (c *timedConn) NetConn() net.Conn { return c.Conn }

// timedSyscallConn is a timedConn over a connection with a file descriptor.
type timedSyscallConn struct {
	*timedConn
	sc syscall.Conn
}

func (c *timedSyscallConn) SyscallConn() (syscall.RawConn, error) { return c.sc.SyscallConn() }

var (
	_ net.Conn     = (*timedConn)(nil)
	_ syscall.Conn = (*timedSyscallConn)(nil)
)
