package cache

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// slowness tells a Redis that is slow, or silent, from one that is not. A
// Redis that answers every call, but slowly, costs each request most of the
// timeout without ever failing, and one that answers nothing costs each
// request the whole timeout: both are better skipped. But one call that
// timed out, or one slow round trip, says little on a busy host: a Redis
// beside a CPU hog answers late now and then and is healthy. So Redis is
// judged slow only when every round trip has been slow (or timed out) for a
// span of time, with at least slowCalls of them; one round trip in time ends
// the run. Round trips are timed as the kernel saw them where it can tell
// (see timedConn), so that the gateway's own stalls do not count.
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

// timing is what timedDialer needs to know of the store.
type timing struct {
	timeout   time.Duration       // the calls' timeout, and the fresh deadline of a late read
	slowAfter time.Duration       // a round trip longer than this is worth asking the kernel about
	observe   func(time.Duration) // receives every round trip
}

// timedDialer wraps dial so that every connection it makes reports its
// round trips to t.observe (see timedConn). A dial that timed out is
// reported as a round trip of the whole timeout.
func timedDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error), t timing) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			if isTimeout(err) {
				t.observe(t.timeout)
			}
			return nil, err
		}
		tc := &timedConn{Conn: conn, timing: t, socket: socketOf(conn)}
		// go-redis checks an idle connection's health through its file
		// descriptor before reusing it; hiding it would hand a dead
		// connection to the next call, which would fail and mark Redis down.
		if sc, ok := conn.(syscall.Conn); ok {
			return &timedSyscallConn{timedConn: tc, sc: sc}, nil
		}
		return tc, nil
	}
}

// socketOf returns the socket under conn, looking through wrappers such as
// crypto/tls.Conn; nil if there is none.
func socketOf(conn net.Conn) syscall.RawConn {
	for conn != nil {
		if sc, ok := conn.(syscall.Conn); ok {
			raw, err := sc.SyscallConn()
			if err != nil {
				return nil
			}
			return raw
		}
		w, ok := conn.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		conn = w.NetConn()
	}
	return nil
}

// epoch is the origin of the monotonic times timedConn keeps in an integer.
var epoch = time.Now()

// timedConn times each round trip on a connection: from the moment a
// request is written after the last answer to the first read that returns
// bytes of the next answer. A call's wait for a pooled connection and the
// client's own work are outside it. Reads that no write preceded (pub/sub
// messages) are not round trips and are not timed.
//
// A round trip timed so still ends only when the goroutine reading the
// answer runs, which on a busy host, or in a garbage-collection pause, can
// be long after the answer came. So a round trip that looks slow is timed
// again as the kernel saw it, from the request's last byte sent to the
// answer's last byte received, where the system can tell (Linux, over
// TCP); and a read whose deadline passed while its answer waited is not a
// timeout at all (see Read).
type timedConn struct {
	net.Conn
	timing
	socket syscall.RawConn // the socket under Conn; nil if unknown
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

// Read reads like the connection, except when the read times out with
// bytes waiting on the socket: its deadline passed while its goroutine
// waited for a CPU, or in a garbage-collection pause, though the answer had
// come. That is the gateway's stall, not Redis's slowness, so the answer is
// read under a fresh deadline instead of failing the call. A read that
// times out with nothing waiting has given Redis the whole timeout (the
// deadline is set once the request is written), and counts as a slow round
// trip.
func (c *timedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	late := false
	for n == 0 && isTimeout(err) && waiting(c.socket) {
		late = true
		if c.Conn.SetReadDeadline(time.Now().Add(c.timeout)) != nil {
			break
		}
		n, err = c.Conn.Read(b)
	}
	switch {
	case n > 0:
		if sent := c.sent.Swap(0); sent != 0 {
			c.roundTrip(time.Since(epoch)-time.Duration(sent-1), late)
		}
	case isTimeout(err):
		if sent := c.sent.Swap(0); sent != 0 {
			c.observe(time.Since(epoch) - time.Duration(sent-1))
		}
	}
	return n, err
}

// roundTrip reports a round trip that its reader measured as rtt; late says
// the reader ran only after its deadline had passed. One that looks slow is
// reported as the kernel timed it, when it can tell; a late one that the
// kernel cannot time is not reported, its time being mostly the gateway's.
func (c *timedConn) roundTrip(rtt time.Duration, late bool) {
	if rtt > c.slowAfter || late {
		k, ok := kernelRoundTrip(c.socket)
		switch {
		case ok:
			rtt = k
		case late:
			return
		}
	}
	c.observe(rtt)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
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
