package cache

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/internal/redisconn"
)

// RedisOptions configures NewRedis. Zero fields take the defaults documented
// on each.
type RedisOptions struct {
	// URL locates the server, e.g. redis://user:pass@host:6379/0 (rediss://
	// for TLS). Timeouts given as URL query parameters are overridden by the
	// fields below.
	URL string
	// Cluster says URL names a Redis Cluster: seed nodes as go-redis's
	// ParseClusterURL reads them, redis://host:7000?addr=host:7001&addr=host:7002.
	Cluster bool
	// TTL is the lifetime of a stored value. Default 24h.
	TTL time.Duration
	// Timeout bounds each dial, socket read and write, and the wait for a
	// pooled connection: the most a request pays for a slow or dead Redis.
	// Default 50ms.
	Timeout time.Duration
	// LockTTL is how long the replica computing a value keeps the others
	// waiting if it dies. A live holder extends its lock every LockTTL/3, so
	// this does not bound the computation; a lock with less than LockTTL/3
	// left has missed its extensions, and a waiting replica takes it over.
	// It must be the same on every replica. Default 5s.
	LockTTL time.Duration
	// PollInterval is how often a waiting replica looks again when no
	// notification arrives, in case one was lost. Default 1s.
	PollInterval time.Duration
	// ProbeInterval is how often a Redis known to be down is pinged. Default 1s.
	ProbeInterval time.Duration
	// SlowAfter is how long a round trip to Redis may take before it counts
	// as slow. The round trip is timed on the connection, from the request
	// written to the answer, so that the time a call spends queueing for a
	// connection is not blamed on Redis, and as the kernel saw it where it
	// can tell, so that the time the reader waited for a CPU is not either.
	// Default Timeout/2.
	SlowAfter time.Duration
	// SlowFor is how long every round trip must have been slow or timed
	// out, and at least slowCalls of them, before Redis is treated as down
	// (skipped, and probed until it answers in time): a Redis that is slow
	// or silent for that long costs every request nearly the timeout, while
	// one that answers late now and then, as beside a CPU hog, is healthy,
	// and one round trip in time ends the run. Default 1s.
	SlowFor time.Duration
	// FrontBytes bounds an in-process cache in front of Redis, so that hot
	// selections do not cross the network at all; 0 means 8 MiB, negative
	// turns it off. FrontTTL (default 30 s) bounds how long an entry deleted
	// or overwritten on another replica may still be served here.
	FrontBytes int64
	FrontTTL   time.Duration
	// LogInterval is the least time between two failure log lines; the next
	// line says how many were suppressed. Default 30s.
	LogInterval time.Duration
	// Logger receives failures and recoveries. Default slog.Default().
	Logger *slog.Logger

	// wrapConn, for tests, wraps each new connection beneath the timing of
	// its round trips, to stall its reads as a busy gateway would.
	wrapConn func(net.Conn) net.Conn
}

// Redis is a Store shared by every replica of the gateway. Values live under
// focusgate:sel:{<key>}; the replica computing a missing value holds
// focusgate:lock:{<key>} and announces the end of its computation on the
// channel focusgate:done:{<key>}, so that the others wait instead of paying
// for the same retriever call. The braces are a hash tag: on a Redis
// Cluster a key's value and lock live in one slot, which the script that
// reads one and takes the other needs.
//
// Redis is never on the critical path for failures: calls have short
// timeouts and no retries, a failure other than a timeout marks Redis down
// at once, calls that keep timing out or answering slowly mark it down
// within SlowFor, and while it is down every call returns an error at once
// without touching the network until a background probe succeeds again.
// The one exception is a lock taken before: it is extended, released and its
// value stored whatever this replica believes, since other replicas may be
// waiting on it.
type Redis struct {
	client       redis.UniversalClient
	ttl          time.Duration
	timeout      time.Duration
	lockTTL      time.Duration
	pollInterval time.Duration
	log          *slog.Logger
	logs         throttle

	slow     slowness
	downSlow atomic.Bool // Redis was last marked down for slowness, not a failure
	front    *Memory     // nil when turned off

	up      atomic.Bool
	skipped atomic.Int64
	errs    [numOps]atomic.Int64
	mu      sync.Mutex
	lastErr error // why Redis was last marked down; guarded by mu
	// probeKey is the key of the call that last failed or timed out, which
	// the probe reads: on a cluster it lives on the node that failed, and a
	// PING could go to any node. Empty when no call on a key failed. Guarded
	// by mu.
	probeKey string

	closing chan struct{}
	probed  chan struct{} // closed when the probe goroutine has returned
}

// op names a kind of Redis call in stats and logs.
type op int

const (
	opGet op = iota
	opSet
	opDelete
	opLock // taking, extending and releasing a compute lock
	opWait // subscribing to another replica's computation
	opPing
	numOps
)

var opNames = [numOps]string{"get", "set", "delete", "lock", "wait", "ping"}

func (o op) String() string { return opNames[o] }

// errSkipped is returned for calls not sent because Redis is known to be down.
var errSkipped = errors.New("cache: redis is down; call skipped")

// errSlow marks down a Redis whose calls keep taking most of their timeout,
// or all of it.
var errSlow = errors.New("cache: redis answers too slowly, or not at all")

// errValueTooLarge is returned for a stored value larger than maxValueBytes:
// a selection is a few kilobytes, and reading megabytes would stall the
// request for nothing. The caller computes the value again and overwrites it.
var errValueTooLarge = fmt.Errorf("cache: redis value larger than %d bytes", maxValueBytes)

// maxValueBytes bounds what is read of a stored value.
const maxValueBytes = 1 << 20

// slowCalls is the fewest slow or timed-out round trips in a row that mark
// Redis down, however long they span.
const slowCalls = 3

var (
	// lockScript returns the value under KEYS[1] when there is one (at most
	// ARGV[3]+1 bytes of it: a value is never empty), and otherwise tries to
	// take the lock KEYS[2] with token ARGV[1] for ARGV[2] ms, returning 1
	// when it took it and 0 when another replica holds it. A lock that holds
	// ARGV[1] already was taken by this very call, sent once more: the
	// cluster client sends a call that timed out again, and the caller must
	// not wait on its own lock. A lock with less than ARGV[4] ms left (or
	// none: PTTL -1) is one its holder stopped extending, and is taken over.
	lockScript = redis.NewScript(`
local val = redis.call("GETRANGE", KEYS[1], 0, ARGV[3])
if val ~= "" then
	return val
end
if redis.call("SET", KEYS[2], ARGV[1], "NX", "PX", ARGV[2]) or redis.call("GET", KEYS[2]) == ARGV[1] then
	return 1
end
if redis.call("PTTL", KEYS[2]) < tonumber(ARGV[4]) then
	redis.call("SET", KEYS[2], ARGV[1], "PX", ARGV[2])
	return 1
end
return 0`)
	// extendScript extends a lock only while the caller still holds it.
	extendScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`)
	// releaseScript stores the computed value ARGV[3] under KEYS[2] for
	// ARGV[4] ms unless it is empty (the computation failed), deletes the
	// lock KEYS[1] only while the caller still holds it, and wakes the
	// waiting replicas on channel ARGV[2], all in one round trip.
	releaseScript = redis.NewScript(`
if ARGV[3] ~= "" then
	redis.call("SET", KEYS[2], ARGV[3], "PX", ARGV[4])
end
if redis.call("GET", KEYS[1]) == ARGV[1] then
	redis.call("DEL", KEYS[1])
end
return redis.call("PUBLISH", ARGV[2], "")`)
)

// NewRedis returns a Redis store for opts.URL. It fails only for an invalid
// URL: a server that is down at start is marked down and probed until it
// answers. Call Close when done.
func NewRedis(opts RedisOptions) (*Redis, error) {
	opts = opts.withDefaults()
	r := &Redis{
		ttl:          opts.TTL,
		timeout:      opts.Timeout,
		lockTTL:      opts.LockTTL,
		pollInterval: opts.PollInterval,
		slow:         slowness{after: opts.SlowAfter, span: opts.SlowFor},
		log:          opts.Logger,
		logs:         throttle{every: opts.LogInterval},
		closing:      make(chan struct{}),
		probed:       make(chan struct{}),
	}
	client, err := redisconn.Open(opts.URL, opts.Cluster, opts.Timeout, opts.wrap(timing{timeout: opts.Timeout, slowAfter: opts.SlowAfter, observe: r.roundTrip}))
	if err != nil {
		// A url.Error quotes the whole URL, password included.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return nil, fmt.Errorf("cache: invalid redis URL: %w", err)
	}
	r.client = client
	if opts.FrontBytes > 0 {
		r.front = NewMemory(opts.FrontBytes, opts.FrontTTL)
	}
	r.up.Store(true)
	go r.probe(opts.ProbeInterval)
	return r, nil
}

// wrap returns the dialer of a client whose every round trip is reported to
// t.observe, its connections wrapped by o.wrapConn if set.
func (o RedisOptions) wrap(t timing) func(redisconn.Dial) redisconn.Dial {
	return func(dial redisconn.Dial) redisconn.Dial {
		if o.wrapConn != nil {
			inner := dial
			dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
				conn, err := inner(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return o.wrapConn(conn), nil
			}
		}
		return timedDialer(dial, t)
	}
}

func (o RedisOptions) withDefaults() RedisOptions {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.TTL, 24*time.Hour)
	def(&o.Timeout, 50*time.Millisecond)
	def(&o.LockTTL, 5*time.Second)
	def(&o.PollInterval, time.Second)
	def(&o.ProbeInterval, time.Second)
	def(&o.LogInterval, 30*time.Second)
	def(&o.SlowAfter, o.Timeout/2)
	def(&o.SlowFor, time.Second)
	def(&o.FrontTTL, 30*time.Second)
	if o.FrontBytes == 0 {
		o.FrontBytes = 8 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Close stops the background probe and closes the connections.
func (r *Redis) Close() error {
	close(r.closing)
	<-r.probed
	return r.client.Close()
}

// Status returns nil while Redis is believed up, and the failure that marked
// it down otherwise. It is for readiness reports that should show the state
// without failing: requests still succeed without Redis, only uncached.
func (r *Redis) Status() error {
	if r.up.Load() {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

// Stats returns the counters accumulated since NewRedis.
func (r *Redis) Stats() focusgate.RedisStats {
	s := focusgate.RedisStats{Up: r.up.Load(), Skipped: r.skipped.Load(), Errors: make(map[string]int64, numOps)}
	for o := range numOps {
		s.Errors[o.String()] = r.errs[o].Load()
	}
	return s
}

// Get returns the value under key, or ErrNotFound.
func (r *Redis) Get(ctx context.Context, key string) ([]byte, error) {
	if r.front != nil {
		if val, err := r.front.Get(ctx, key); err == nil {
			return val, nil
		}
	}
	if !r.available() {
		return nil, errSkipped
	}
	// A value is never empty, so an empty range is a missing key; more than
	// maxValueBytes is not read.
	val, err := r.client.GetRange(ctx, valueKey(key), 0, maxValueBytes).Bytes()
	if err != nil {
		return nil, r.fail(ctx, opGet, valueKey(key), err)
	}
	switch {
	case len(val) == 0:
		return nil, ErrNotFound
	case len(val) > maxValueBytes:
		return nil, errValueTooLarge
	}
	r.remember(key, val)
	return val, nil
}

// held answers from the in-process front alone: what it does not hold,
// Redis may.
func (r *Redis) held(key string) ([]byte, error) {
	if r.front != nil {
		if val, err := r.front.held(key); err == nil {
			return val, nil
		}
	}
	return nil, ErrNotHeld
}

// remember keeps val in the in-process front, when there is one.
func (r *Redis) remember(key string, val []byte) {
	if r.front != nil {
		r.front.Set(context.Background(), key, val)
	}
}

// Set stores val under key for the TTL.
func (r *Redis) Set(ctx context.Context, key string, val []byte) error {
	r.remember(key, val)
	if !r.available() {
		return errSkipped
	}
	if err := r.client.Set(ctx, valueKey(key), val, r.ttl).Err(); err != nil {
		return r.fail(ctx, opSet, valueKey(key), err)
	}
	return nil
}

// Delete removes the value under key, if any.
func (r *Redis) Delete(ctx context.Context, key string) error {
	if r.front != nil {
		r.front.Delete(ctx, key)
	}
	if !r.available() {
		return errSkipped
	}
	if err := r.client.Del(ctx, valueKey(key)).Err(); err != nil {
		return r.fail(ctx, opDelete, valueKey(key), err)
	}
	return nil
}

func (r *Redis) claim(ctx context.Context, key string) ([]byte, func([]byte), error) {
	val, found, release, err := r.lock(ctx, key)
	if err == nil && !found && release == nil {
		val, release, err = r.wait(ctx, key)
	}
	if err == nil && release == nil {
		r.remember(key, val)
	}
	return val, release, err
}

// lock returns the value under key when it is stored, and otherwise tries
// once to make this replica the one that computes it. It returns neither a
// value nor a release when another replica holds the lock.
//
// Looking for the value and taking the lock are one atomic step: as two
// calls, a replica whose look found nothing could take the lock just after
// the holder stored the value and released it, and compute the value again.
//
// A call that timed out may have taken the lock all the same, and then only
// this caller's release would free it before it expires: so the caller
// acts as its holder. That costs nothing more than computing alone, and
// its release stores the value and wakes whoever waits on the lock, whoever
// holds it.
func (r *Redis) lock(ctx context.Context, key string) (val []byte, found bool, release func([]byte), err error) {
	if !r.available() {
		return nil, false, nil, errSkipped
	}
	token := rand.Text()
	res, err := lockScript.Run(ctx, r.client, []string{valueKey(key), lockKey(key)},
		token, r.lockTTL.Milliseconds(), maxValueBytes, (r.lockTTL / 3).Milliseconds()).Result()
	if err != nil {
		if err = r.fail(ctx, opLock, valueKey(key), err); !timedOut(err) {
			return nil, false, nil, err
		}
		res = int64(1)
	}
	switch res := res.(type) {
	case string:
		if len(res) > maxValueBytes {
			return nil, false, nil, errValueTooLarge
		}
		return []byte(res), true, nil, nil
	case int64:
		if res == 0 {
			return nil, false, nil, nil
		}
	default:
		return nil, false, nil, r.fail(ctx, opLock, valueKey(key), fmt.Errorf("unexpected reply %T to the lock script", res))
	}
	stop := make(chan struct{})
	go r.keepLocked(key, token, stop)
	return nil, false, func(val []byte) {
		close(stop)
		r.unlock(key, token, val)
	}, nil
}

// keepLocked extends the lock on key until stop is closed or the lock is
// lost, so that the lock can be short, letting a waiter take over soon after
// a holder dies, while a live holder's computation may take longer than it.
// It extends whether or not this replica trusts Redis at the moment: the
// other replicas may well reach it, and a lock left to lapse would have them
// compute the value again.
func (r *Redis) keepLocked(key, token string, stop <-chan struct{}) {
	tick := time.NewTicker(r.lockTTL / 3)
	defer tick.Stop()
	ctx := context.Background()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		held, err := extendScript.Run(ctx, r.client, []string{lockKey(key)}, token, r.lockTTL.Milliseconds()).Int()
		switch {
		case err != nil:
			r.fail(ctx, opLock, lockKey(key), err)
		case held == 0:
			return // Lapsed, or taken over after missed extensions.
		}
	}
}

// unlock stores val (nil when the computation failed), releases the lock and
// wakes the replicas waiting on it in one round trip. Without a value, a
// waiter takes over the computation.
//
// It is sent whether or not this replica trusts Redis at the moment, bounded
// like every call by the timeout: a replica that saw a few slow or failed
// calls must not leave the others waiting on its lock until it expires, and
// they may well reach Redis. A failure is counted and logged like any other,
// and the waiters then take over once the lock stops being extended.
func (r *Redis) unlock(key, token string, val []byte) {
	if val != nil {
		r.remember(key, val)
	}
	// The computation may have outlived every caller; the lock must go anyway.
	ctx := context.Background()
	err := releaseScript.Run(ctx, r.client, []string{lockKey(key), valueKey(key)},
		token, doneChannel(key), val, r.ttl.Milliseconds()).Err()
	if err != nil {
		r.fail(ctx, opLock, lockKey(key), err)
	}
}

// wait blocks while another replica holds the lock on key. It returns the
// value once that replica has stored it, or a release when the lock came
// free without a value (its holder failed or died) and this replica took it.
func (r *Redis) wait(ctx context.Context, key string) ([]byte, func([]byte), error) {
	// Subscribe before looking again, so that a value stored in between
	// still wakes this replica.
	sub := r.client.Subscribe(ctx, doneChannel(key))
	defer sub.Close()
	if _, err := sub.ReceiveTimeout(ctx, r.timeout); err != nil {
		return nil, nil, r.fail(ctx, opWait, doneChannel(key), err)
	}
	done := sub.Channel()
	poll := time.NewTicker(r.pollInterval)
	defer poll.Stop()
	for {
		val, found, release, err := r.lock(ctx, key)
		if err != nil || found || release != nil {
			return val, release, err
		}
		select {
		case <-done:
		case <-poll.C:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// roundTrip judges one round trip on a connection to Redis, and marks Redis
// down once it has been slow for long enough.
func (r *Redis) roundTrip(rtt time.Duration) {
	if r.slow.observe(rtt, time.Now()) && r.up.Load() {
		r.down(errSlow, "", "rtt", rtt)
	}
}

// available reports whether Redis is believed up, counting the call as
// skipped when it is not.
func (r *Redis) available() bool {
	if r.up.Load() {
		return true
	}
	r.skipped.Add(1)
	return false
}

// fail records a failed call on the Redis key key (empty for a call on no
// key) and returns its error. A failure marks Redis down at once, whatever
// its kind, unless the caller gave up or the call timed out: a server that
// refuses or drops a call would cost the next request the same, and the
// probe brings it back within a ProbeInterval of answering again. A timeout
// alone says little, though: a healthy Redis on a busy host answers late
// now and then, and a wait for a pooled connection is the gateway's own
// queue. So a call that timed out goes uncached, and Redis is judged by
// its round trips over SlowFor (see slowness), where each read that timed
// out counts as a slow one.
func (r *Redis) fail(ctx context.Context, o op, key string, err error) error {
	err = fmt.Errorf("cache: redis %s: %w", o, err)
	if gaveUp(ctx) {
		return err // Redis is not to blame.
	}
	r.errs[o].Add(1)
	if timedOut(err) {
		if key != "" {
			r.mu.Lock()
			r.probeKey = key // in case its node is the one that is slow
			r.mu.Unlock()
		}
		if suppressed, ok := r.logs.allow(time.Now()); ok {
			r.log.Warn("redis cache call timed out and goes uncached; Redis is marked down only if its calls keep timing out or answering slowly",
				"op", o.String(), "err", err, "suppressed", suppressed)
		}
		return err
	}
	r.down(err, key, "op", o.String())
	return err
}

// gaveUp reports whether the caller's context has ended, or reached its
// deadline: a call bounded by that deadline times out just before the
// context's own timer marks it done.
func gaveUp(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	deadline, ok := ctx.Deadline()
	return ok && !time.Now().Before(deadline)
}

// timedOut reports whether err is a call's timeout: a dial, read or write
// that ran out of time, or a wait for a pooled connection that did.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, redis.ErrPoolTimeout) || errors.As(err, &ne) && ne.Timeout()
}

// down marks Redis down for err, remembering key (when not empty) for the
// probe, and logs it at most once per LogInterval.
func (r *Redis) down(err error, key string, logArgs ...any) {
	r.mu.Lock()
	r.lastErr = err
	if key != "" {
		r.probeKey = key
	}
	r.downSlow.Store(errors.Is(err, errSlow))
	r.mu.Unlock()
	wasUp := r.up.Swap(false)
	if suppressed, ok := r.logs.allow(time.Now()); ok {
		r.log.Warn("redis cache call failed; requests go on uncached while it is down",
			append(logArgs, "err", err, "was_up", wasUp, "suppressed", suppressed)...)
	}
}

// probe pings Redis at start, so that Status is right before the first
// request, and then every interval while it is down.
func (r *Redis) probe(interval time.Duration) {
	defer close(r.probed)
	r.ping()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-r.closing:
			return
		case <-tick.C:
			if !r.up.Load() {
				r.ping()
			}
		}
	}
}

// ping probes Redis: it reads the key of the call that failed, if one did,
// and otherwise sends a PING. On a cluster the key leads to the node that
// failed, where a PING goes to any node: with a master dead and no replica
// to take its slots, a PING would find the others and bring caching back,
// only for the next call on the dead node's slots to fail again.
func (r *Redis) ping() {
	ctx := context.Background()
	r.mu.Lock()
	key := r.probeKey
	r.mu.Unlock()
	var err error
	if key == "" {
		err = r.client.Ping(ctx).Err()
	} else {
		err = r.client.GetRange(ctx, key, 0, 0).Err()
	}
	if err != nil {
		r.fail(ctx, opPing, key, err)
		return
	}
	// Judged by the round trip on the connection, not by the time the call
	// took, which on a busy host is mostly the wait for a CPU: the slowness
	// run goes on only if this round trip was slow too.
	if !r.up.Load() && r.downSlow.Load() && r.slow.running.Load() {
		return // still too slow to come back
	}
	r.mu.Lock()
	if r.probeKey == key {
		r.probeKey = ""
	}
	r.mu.Unlock()
	if !r.up.Swap(true) {
		r.log.Info("redis cache reachable again; caching resumes")
	}
}

func valueKey(key string) string    { return "focusgate:sel:{" + key + "}" }
func lockKey(key string) string     { return "focusgate:lock:{" + key + "}" }
func doneChannel(key string) string { return "focusgate:done:{" + key + "}" }

// throttle lets one log line through per interval and counts the lines it
// holds back, so that a dead Redis under load costs one line per interval
// rather than one per request.
type throttle struct {
	every time.Duration

	mu         sync.Mutex
	next       time.Time
	suppressed int
}

// allow reports whether a line may be logged at now and, if so, how many
// were held back since the last one.
func (t *throttle) allow(now time.Time) (suppressed int, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Before(t.next) {
		t.suppressed++
		return 0, false
	}
	suppressed, t.suppressed, t.next = t.suppressed, 0, now.Add(t.every)
	return suppressed, true
}
