package cache_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
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
