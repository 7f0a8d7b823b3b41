package cache_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/cache/cachetest"
	"github.com/focusgate/focusgate/internal/redistest"
)

// calls returns how many times the server ran command, from INFO
// commandstats.
func calls(t testing.TB, raw *redis.Client, command string) int {
	t.Helper()
	info, err := raw.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`cmdstat_` + command + `:calls=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// startPings is how many PINGs a server from redistest.Start has answered
// before a test uses it: the one that found it ready.
const startPings = 1

// neverProbed keeps a store's belief about Redis as the test sets it: no
// probe after the first one at start brings a Redis marked down back.
func neverProbed(o *cache.RedisOptions) { o.ProbeInterval = time.Hour }

// longLock makes a lock outlive any test unless it is released: a waiter
// that gets the value got it from the release, not from the lock expiring.
func longLock(o *cache.RedisOptions) { o.LockTTL = time.Hour }

// A replica that stops trusting Redis while it computes still releases its
// lock and wakes the replicas waiting for it when it ends, with the value it
// computed: they do not wait for the lock to expire, and do not compute the
// value again.
func TestHolderThatDistrustsRedisStillReleasesItsLock(t *testing.T) {
	srv := redistest.Start(t) // of its own: the test counts the pings it receives
	raw := rawClient(t, srv.URL())
	ra := cachetest.NewStore(t, srv.URL(), neverProbed, longLock)
	rb := cachetest.NewStore(t, srv.URL(), neverProbed, longLock, wakeOnlyByNotification)
	// Each store pings once at start; landing after MarkDown, that ping
	// would make the holder trust Redis again.
	waitFor(t, "both stores' first probe", func() bool { return calls(t, raw, "ping") == startPings+2 })
	a, b := cache.New(ra, nil), cache.New(rb, nil)
	key := testKey(t)

	holder := goFetch(t.Context(), a, key, func(ctx context.Context) ([]byte, error) {
		err := poll(ctx, "the other replica to wait", func() bool {
			n, err := raw.PubSubNumSub(ctx, cache.DoneChannel(key)).Result()
			return err == nil && n[cache.DoneChannel(key)] == 1
		})
		ra.MarkDown() // as a busy host's slow calls or a failed call would
		return []byte("from a"), err
	})
	waitFor(t, "the first replica to hold the lock", func() bool {
		return raw.Exists(t.Context(), cache.LockKey(key)).Val() == 1
	})
	waiter := goFetch(t.Context(), b, key, func(context.Context) ([]byte, error) {
		return nil, errors.New("computed again what the holder had computed")
	})

	if r := receive(t, holder); r.err != nil || r.out != focusgate.CacheMiss || string(r.val) != "from a" {
		t.Fatalf("holder got %q, %q, %v", r.val, r.out, r.err)
	}
	if r := receive(t, waiter); r.err != nil || r.out != focusgate.CacheShared || string(r.val) != "from a" {
		t.Fatalf("waiter got %q, %q, %v; want the holder's value as soon as it ended", r.val, r.out, r.err)
	}
	if n := raw.Exists(t.Context(), cache.LockKey(key)).Val(); n != 0 {
		t.Error("the lock outlived its holder")
	}
	if ra.Status() == nil {
		t.Error("releasing the lock made the holder trust Redis again; only the probe may")
	}
}

// A lock whose holder stopped extending it (a replica that froze, or lost
// Redis and cannot release) is taken over by a waiter once it has missed
// its extensions, not only when it expires.
func TestWaiterTakesOverALockNoLongerExtended(t *testing.T) {
	url := redistest.Shared(t)
	raw := rawClient(t, url)
	// A live holder extends its lock every hour/3, so a lock with ten
	// minutes left has missed two extensions.
	c := cache.New(cachetest.NewStore(t, url, longLock, func(o *cache.RedisOptions) { o.PollInterval = 10 * time.Millisecond }), nil)
	key := testKey(t)
	if err := raw.Set(t.Context(), cache.LockKey(key), "stalled replica", 10*time.Minute).Err(); err != nil {
		t.Fatal(err)
	}

	got := goFetch(t.Context(), c, key, func(ctx context.Context) ([]byte, error) {
		holder, err := raw.Get(ctx, cache.LockKey(key)).Result()
		if err != nil || holder == "stalled replica" {
			return nil, errors.New("computed without holding the lock")
		}
		return []byte("selection"), nil
	})
	if r := receive(t, got); r.err != nil || r.out != focusgate.CacheMiss || string(r.val) != "selection" {
		t.Fatalf("Fetch = %q, %q, %v; want to take the stalled lock over and compute", r.val, r.out, r.err)
	}
}

// lostAnswers is a connection that loses the answers lose picks, given the
// request they answer: such an answer is read off the socket and dropped,
// and the read goes on waiting, until its deadline, for one that never
// comes, as when an answer is lost on its way.
type lostAnswers struct {
	net.Conn
	lose func(request, answer []byte) bool

	mu      sync.Mutex
	request []byte // written since the last read
}

func (c *lostAnswers) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.request = append(c.request, b...)
	c.mu.Unlock()
	return c.Conn.Write(b)
}

func (c *lostAnswers) Read(b []byte) (int, error) {
	c.mu.Lock()
	request := c.request
	c.request = nil
	c.mu.Unlock()
	n, err := c.Conn.Read(b)
	if n > 0 && request != nil && c.lose(request, b[:n]) {
		return c.Conn.Read(b)
	}
	return n, err
}

func (c *lostAnswers) NetConn() net.Conn { return c.Conn }

// loseFirstLockTaken loses the answer of the first call that took the lock
// on key: the lock is then held, but the caller does not know it.
func loseFirstLockTaken(key string) func(request, answer []byte) bool {
	var once sync.Once
	return func(request, answer []byte) bool {
		lost := false
		if bytes.Contains(request, []byte(cache.LockKey(key))) && string(answer) == ":1\r\n" {
			once.Do(func() { lost = true })
		}
		return lost
	}
}

// A replica that does not know whether it took the lock, because the answer
// of its lock call was lost, acts as its holder: whether the call timed out
// (one server) or the cluster client sent it again and found the lock held
// by the same call, the replica computes and releases, and a replica
// waiting on that lock is woken at once. Nobody waits on a lock whose
// holder is done with it; both stores here would wait for hours.
func TestAReplicaThatLostItsLockAnswerStillReleasesTheLock(t *testing.T) {
	// A deployment: the URL of its stores, a client to look at the keys,
	// and how many replicas wait on a key's lock.
	type deployment struct {
		url     string
		cluster bool
		raw     redis.UniversalClient
		waiting func(ctx context.Context, key string) (int64, error)
	}
	tests := []struct {
		name   string
		deploy func(t *testing.T) deployment
	}{
		{"one server: the lock call timed out", func(t *testing.T) deployment {
			url := redistest.Shared(t)
			raw := rawClient(t, url)
			return deployment{url: url, raw: raw, waiting: func(ctx context.Context, key string) (int64, error) {
				n, err := raw.PubSubNumSub(ctx, cache.DoneChannel(key)).Result()
				return n[cache.DoneChannel(key)], err
			}}
		}},
		{"a cluster: the client sent the lock call again", func(t *testing.T) deployment {
			cl := redistest.StartCluster(t, 3)
			raw := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{hostPort(t, cl.URL())}})
			t.Cleanup(func() { raw.Close() })
			return deployment{url: cl.URL(), cluster: true, raw: raw, waiting: func(ctx context.Context, key string) (int64, error) {
				// The waiters subscribe on the node of the key's slot.
				node, err := raw.MasterForKey(ctx, cache.DoneChannel(key))
				if err != nil {
					return 0, err
				}
				n, err := node.PubSubNumSub(ctx, cache.DoneChannel(key)).Result()
				return n[cache.DoneChannel(key)], err
			}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.deploy(t)
			key := testKey(t)
			cluster := func(o *cache.RedisOptions) { o.Cluster = d.cluster }
			lose := loseFirstLockTaken(key)
			a := cache.New(cachetest.NewStore(t, d.url, cluster, longLock, wakeOnlyByNotification, func(o *cache.RedisOptions) {
				o.Timeout = time.Second // the lost answer costs one; long enough for the other calls on a loaded machine
				cache.WrapConns(o, func(c net.Conn) net.Conn { return &lostAnswers{Conn: c, lose: lose} })
			}), nil)
			b := cache.New(cachetest.NewStore(t, d.url, cluster, longLock, wakeOnlyByNotification), nil)

			holder := goFetch(t.Context(), a, key, func(ctx context.Context) ([]byte, error) {
				err := poll(ctx, "the other replica to wait on the lock", func() bool {
					n, err := d.waiting(ctx, key)
					return err == nil && n == 1
				})
				return []byte("from a"), err
			})
			waitFor(t, "the first replica to take the lock", func() bool {
				return d.raw.Exists(t.Context(), cache.LockKey(key)).Val() == 1
			})
			waiter := goFetch(t.Context(), b, key, func(context.Context) ([]byte, error) {
				return nil, errors.New("computed again what the holder had computed")
			})

			if r := receive(t, holder); r.err != nil || r.out != focusgate.CacheMiss || string(r.val) != "from a" {
				t.Fatalf("replica that lost its lock answer got %q, %q, %v; want to compute as the holder", r.val, r.out, r.err)
			}
			if r := receive(t, waiter); r.err != nil || r.out != focusgate.CacheShared || string(r.val) != "from a" {
				t.Fatalf("waiter got %q, %q, %v; want the holder's value as soon as it ended", r.val, r.out, r.err)
			}
			if n := d.raw.Exists(t.Context(), cache.LockKey(key)).Val(); n != 0 {
				t.Error("the lock outlived its holder")
			}
		})
	}
}
