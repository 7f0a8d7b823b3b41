package cache

import (
	"context"
	"net"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// slowness tells a Redis that is slow from a gateway that is. A Redis that
// answers every call, but slowly, costs each request most of the timeout
// without ever failing, so it is better skipped; but a gateway that is
// itself short of CPU makes round trips look slow too, since a round trip
// ends only when the goroutine reading the answer runs. So Redis is judged
// slow only when every round trip has been slow for a span of time, with at
// least slowCalls of them (one round trip in time ends the run: a stall makes
// every call in flight slow at once, then passes), and only if, over that
// span, goroutines waited for a CPU much less than a slow round trip lasts
// (the Go scheduler's own latency histogram): otherwise the run is the
// gateway's, and starts afresh.
type slowness struct {
	after time.Duration // a round trip longer than this is slow
	span  time.Duration // how long a run of slow round trips must last

	running atomic.Bool // a run of slow round trips is under way
	mu      sync.Mutex
	since   time.Time                 // when the run's first slow round trip ended; guarded by mu
	sched   *metrics.Float64Histogram // the scheduler's latencies then; guarded by mu
	n       int                       // slow round trips in the run; guarded by mu
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
		s.since, s.sched, s.n = now, schedLatencies(), 0
	}
	s.n++
	if s.n < slowCalls || now.Sub(s.since) < s.span {
		return false
	}
	sched := schedLatencies()
	if median, ok := medianSince(s.sched, sched); ok && median >= s.after/starvedShare {
		s.since, s.sched, s.n = now, sched, 0 // the gateway's stall, not Redis
		return false
	}
	s.running.Store(false)
	return true
}

// starvedShare: a gateway whose goroutines waited for a CPU, at the median,
// a starvedShare-th of a slow round trip or more is too busy to blame Redis.
const starvedShare = 4

const schedLatencyMetric = "/sched/latencies:seconds"

// schedLatencies returns the Go scheduler's histogram of the time goroutines
// spent ready to run before running, since the process started; nil if the
// runtime does not report it.
func schedLatencies() *metrics.Float64Histogram {
	sample := []metrics.Sample{{Name: schedLatencyMetric}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return sample[0].Value.Float64Histogram()
}

// medianSince returns the median of the latencies counted in now and not
// in before (the lower bound of its bucket); false if there are none.
func medianSince(before, now *metrics.Float64Histogram) (time.Duration, bool) {
	if before == nil || now == nil || len(before.Counts) != len(now.Counts) {
		return 0, false
	}
	var total uint64
	for i, c := range now.Counts {
		total += c - before.Counts[i]
	}
	if total == 0 {
		return 0, false
	}
	var seen uint64
	for i, c := range now.Counts {
		seen += c - before.Counts[i]
		if 2*seen >= total {
			return time.Duration(max(now.Buckets[i], 0) * float64(time.Second)), true
		}
	}
	return 0, false
}

// replies remembers, for each server address, when an answer last came
// back from it, so that a call that timed out can be told apart from a
// server that stopped answering.
type replies struct{ m sync.Map } // address → *atomic.Int64, nanoseconds since epoch

func (rs *replies) at(addr string) *atomic.Int64 {
	if v, ok := rs.m.Load(addr); ok {
		return v.(*atomic.Int64)
	}
	v, _ := rs.m.LoadOrStore(addr, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// since reports whether addr answered within the last d.
func (rs *replies) since(addr string, d time.Duration) bool {
	v, ok := rs.m.Load(addr)
	if !ok {
		return false
	}
	last := v.(*atomic.Int64).Load()
	return last != 0 && time.Since(epoch)-time.Duration(last) < d
}

// timedDialer wraps dial so that every connection it makes reports its
// round trips to observe and the time of its answers to rs.
func timedDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error), observe func(time.Duration), rs *replies) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := &timedConn{Conn: conn, observe: observe, replied: rs.at(conn.RemoteAddr().String())}
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
	replied *atomic.Int64 // when the server last answered, on any connection
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
	switch {
	case n > 0:
		if sent := c.sent.Swap(0); sent != 0 {
			now := time.Since(epoch)
			c.replied.Store(int64(now))
			c.observe(now - time.Duration(sent-1))
		}
	case isTimeout(err):
		// A round trip that timed out is a slow one: a run of them marks
		// Redis slow even when each is forgiven as the gateway's fault.
		if sent := c.sent.Swap(0); sent != 0 {
			c.observe(time.Since(epoch) - time.Duration(sent-1))
		}
	}
	return n, err
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
