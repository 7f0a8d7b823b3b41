package cache_test

import (
	"context"
	"errors"
	"fmt"
	"math"
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

// rawClient returns a plain client to look at what the store wrote.
func rawClient(t testing.TB, url string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

// subscribers returns how many connections wait on channel.
func subscribers(t testing.TB, raw *redis.Client, channel string) int64 {
	t.Helper()
	n, err := raw.PubSubNumSub(t.Context(), channel).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n[channel]
}

// wakeOnlyByNotification makes a waiting replica depend on the pub/sub
// notification alone, so that a test fails if it is never sent.
func wakeOnlyByNotification(o *cache.RedisOptions) { o.PollInterval = time.Hour }

func TestNewRedisRejectsInvalidURL(t *testing.T) {
	tests := []struct {
		url     string
		wantErr string
	}{
		{"http://localhost:6379", "invalid URL scheme"},
		{"redis://localhost:6379/notadb", "invalid database number"},
		{"redis://user:s3cret@localhost:6379/%zz", "invalid URL escape"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			r, err := cache.NewRedis(cache.RedisOptions{URL: tt.url})
			if err == nil {
				r.Close()
				t.Fatal("NewRedis accepted an invalid URL")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not say %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error %q reveals the password", err)
			}
		})
	}
}

func TestRedisStoresNamespacedValuesWithTTL(t *testing.T) {
	url := redistest.Shared(t)
	r := cachetest.NewStore(t, url, func(o *cache.RedisOptions) { o.TTL = time.Hour })
	raw := rawClient(t, url)
	ctx := t.Context()
	key := testKey(t)

	if _, err := r.Get(ctx, key); !errors.Is(err, cache.ErrNotFound) {
		t.Fatalf("Get before Set: err = %v, want ErrNotFound", err)
	}
	if err := r.Set(ctx, key, []byte("selection")); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Get(ctx, key); err != nil || string(got) != "selection" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if got, err := raw.Get(ctx, "focusgate:sel:{"+key+"}").Result(); err != nil || got != "selection" {
		t.Errorf("raw GET focusgate:sel:{<key>} = %q, %v", got, err)
	}
	if ttl, err := raw.PTTL(ctx, "focusgate:sel:{"+key+"}").Result(); err != nil || ttl <= 0 || ttl > time.Hour {
		t.Errorf("PTTL = %v, %v; want within (0, 1h]", ttl, err)
	}
}

func TestFetchOnOneReplicaIsAHitOnAnother(t *testing.T) {
	url := redistest.Shared(t)
	a, b := cache.New(cachetest.NewStore(t, url), nil), cache.New(cachetest.NewStore(t, url), nil)
	key := testKey(t)
	compute := func(context.Context) ([]byte, error) { return []byte("selection"), nil }

	if _, out, err := a.Fetch(t.Context(), key, compute); err != nil || out != focusgate.CacheMiss {
		t.Fatalf("first replica: %q, %v; want a miss", out, err)
	}
	val, out, err := b.Fetch(t.Context(), key, func(context.Context) ([]byte, error) {
		return nil, errors.New("second replica computed a stored value")
	})
	if err != nil || out != focusgate.CacheHit || string(val) != "selection" {
		t.Fatalf("second replica: %q, %q, %v; want a hit", val, out, err)
	}
}

func TestFetchComputesOnceAcrossReplicas(t *testing.T) {
	const callers = 20
	url := redistest.Shared(t)
	a := cache.New(cachetest.NewStore(t, url, wakeOnlyByNotification), nil)
	b := cache.New(cachetest.NewStore(t, url, wakeOnlyByNotification), nil)
	raw := rawClient(t, url)
	key := testKey(t)
	var calls atomic.Int32
	release := make(chan struct{})
	compute := func(context.Context) ([]byte, error) {
		calls.Add(1)
		<-release
		return []byte("selection"), nil
	}

	var results []<-chan result
	for i := range callers {
		replica := a
		if i%2 == 1 {
			replica = b
		}
		results = append(results, goFetch(t.Context(), replica, key, compute))
	}
	waitFor(t, "one replica to compute while the other waits for it", func() bool {
		return calls.Load() == 1 && a.Waiting(key) == callers/2 && b.Waiting(key) == callers/2 &&
			subscribers(t, raw, cache.DoneChannel(key)) == 1
	})
	close(release)

	outcomes := map[focusgate.CacheOutcome]int{}
	for _, ch := range results {
		r := receive(t, ch)
		if r.err != nil || string(r.val) != "selection" {
			t.Fatalf("Fetch = %q, %v", r.val, r.err)
		}
		outcomes[r.out]++
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("compute ran %d times across replicas, want 1", n)
	}
	if want := map[focusgate.CacheOutcome]int{focusgate.CacheMiss: 1, focusgate.CacheShared: callers - 1}; fmt.Sprint(outcomes) != fmt.Sprint(want) {
		t.Errorf("outcomes %v, want %v", outcomes, want)
	}
}

// A replica that finds no value and then takes the lock must not compute
// when, in between, the holder stored the value and released its lock: taking
// the lock must see the value the holder stored before releasing it.
func TestReplicaDoesNotRecomputeWhatTheHolderStoredAfterItsLook(t *testing.T) {
	url := redistest.Shared(t)
	a := cache.New(cachetest.NewStore(t, url), nil)
	key := testKey(t)
	// The holder's whole computation runs after b's Get has found nothing
	// and before b tries to take the lock.
	b := cache.New(cache.AfterFirstGet(cachetest.NewStore(t, url), func() {
		val, out, err := a.Fetch(t.Context(), key, func(context.Context) ([]byte, error) { return []byte("from a"), nil })
		if err != nil || out != focusgate.CacheMiss || string(val) != "from a" {
			t.Errorf("holder got %q, %q, %v; want to compute and store the value", val, out, err)
		}
	}), nil)

	val, out, err := b.Fetch(t.Context(), key, func(context.Context) ([]byte, error) {
		return nil, errors.New("computed again a value another replica had stored")
	})
	if err != nil || out != focusgate.CacheShared || string(val) != "from a" {
		t.Errorf("second replica got %q, %q, %v; want the holder's value", val, out, err)
	}
}

func TestWaitingReplicaComputesWhenHolderFails(t *testing.T) {
	url := redistest.Shared(t)
	a := cache.New(cachetest.NewStore(t, url), nil)
	b := cache.New(cachetest.NewStore(t, url, wakeOnlyByNotification), nil)
	raw := rawClient(t, url)
	key := testKey(t)
	errRetriever := errors.New("retriever down")
	holding, fail := make(chan struct{}), make(chan struct{})

	first := goFetch(t.Context(), a, key, func(context.Context) ([]byte, error) {
		close(holding)
		<-fail
		return nil, errRetriever
	})
	receive(t, holding)
	second := goFetch(t.Context(), b, key, func(context.Context) ([]byte, error) {
		return []byte("from b"), nil
	})
	waitFor(t, "the second replica to wait", func() bool { return subscribers(t, raw, cache.DoneChannel(key)) == 1 })
	close(fail)

	if r := receive(t, first); !errors.Is(r.err, errRetriever) {
		t.Errorf("holder got %q, %v; want its own error", r.out, r.err)
	}
	if r := receive(t, second); r.err != nil || r.out != focusgate.CacheMiss || string(r.val) != "from b" {
		t.Errorf("waiter got %q, %q, %v; want to compute the value itself", r.val, r.out, r.err)
	}
}

func TestWaitingReplicaTakesOverFromDeadHolder(t *testing.T) {
	url := redistest.Shared(t)
	raw := rawClient(t, url)
	c := cache.New(cachetest.NewStore(t, url, func(o *cache.RedisOptions) { o.PollInterval = 20 * time.Millisecond }), nil)
	key := testKey(t)
	// A replica took the lock and died: nobody will release it or notify.
	if err := raw.Set(t.Context(), cache.LockKey(key), "dead replica", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}

	val, out, err := c.Fetch(t.Context(), key, func(ctx context.Context) ([]byte, error) {
		if holder, _ := raw.Get(ctx, cache.LockKey(key)).Result(); holder == "dead replica" {
			return nil, errors.New("computed while another replica's lock was in force")
		}
		return []byte("selection"), nil
	})
	if err != nil || out != focusgate.CacheMiss || string(val) != "selection" {
		t.Fatalf("Fetch = %q, %q, %v; want to compute once the dead lock expired", val, out, err)
	}
}

func TestHolderKeepsItsLockWhileComputing(t *testing.T) {
	// Long enough that a loaded machine never misses an extension (one
	// every lockTTL/3) by a whole TTL.
	const lockTTL = 5 * time.Second
	url := redistest.Shared(t)
	raw := rawClient(t, url)
	a := cache.New(cachetest.NewStore(t, url, func(o *cache.RedisOptions) { o.LockTTL = lockTTL }), nil)
	b := cache.New(cachetest.NewStore(t, url, func(o *cache.RedisOptions) { o.PollInterval = 10 * time.Millisecond }), nil)
	key := testKey(t)

	holder := goFetch(t.Context(), a, key, func(ctx context.Context) ([]byte, error) {
		if err := poll(ctx, "the other replica to wait", func() bool {
			n, err := raw.PubSubNumSub(ctx, cache.DoneChannel(key)).Result()
			return err == nil && n[cache.DoneChannel(key)] == 1
		}); err != nil {
			return nil, err
		}
		// Compute for longer than the lock's TTL: four extensions, one every
		// lockTTL/3, span more than one TTL.
		extensions, last := 0, time.Duration(math.MaxInt64)
		err := poll(ctx, "four lock extensions", func() bool {
			ttl := raw.PTTL(ctx, cache.LockKey(key)).Val()
			if ttl > last {
				extensions++
			}
			last = ttl
			return extensions == 4
		})
		return []byte("from a"), err
	})
	waitFor(t, "the first replica to hold the lock", func() bool {
		return raw.Exists(t.Context(), cache.LockKey(key)).Val() == 1
	})
	waiter := goFetch(t.Context(), b, key, func(context.Context) ([]byte, error) {
		return nil, errors.New("took over from a live holder")
	})

	if r := receive(t, holder); r.err != nil || r.out != focusgate.CacheMiss {
		t.Fatalf("holder got %q, %v", r.out, r.err)
	}
	if r := receive(t, waiter); r.err != nil || r.out != focusgate.CacheShared || string(r.val) != "from a" {
		t.Fatalf("waiter got %q, %q, %v; want the holder's value", r.val, r.out, r.err)
	}
}

func TestFetchSurvivesRedisDeathAndResumesCaching(t *testing.T) {
	srv := redistest.Start(t)
	r := cachetest.NewStore(t, srv.URL())
	c := cache.New(r, nil)
	ctx := t.Context()
	// The store pings Redis once at start on a goroutine of its own; landing
	// after the server's death below, that ping would mark Redis down before
	// the set that this test expects to fail.
	raw := rawClient(t, srv.URL())
	waitFor(t, "the store's first probe", func() bool {
		return strings.Contains(raw.ClientList(ctx).Val(), "cmd=ping")
	})
	compute := func(context.Context) ([]byte, error) { return []byte("selection"), nil }
	fetch := func(key string, want focusgate.CacheOutcome) {
		t.Helper()
		val, out, err := c.Fetch(ctx, key, compute)
		if err != nil || out != want || string(val) != "selection" {
			t.Fatalf("Fetch(%.8s) = %q, %q, %v; want %q", key, val, out, err, want)
		}
	}

	// Redis dies while the value is being computed.
	val, out, err := c.Fetch(ctx, testKey(t), func(context.Context) ([]byte, error) {
		srv.Stop()
		return []byte("selection"), nil
	})
	if err != nil || out != focusgate.CacheMiss || string(val) != "selection" {
		t.Fatalf("Fetch across Redis's death = %q, %q, %v; want the computed value", val, out, err)
	}
	// The value is stored by the release of the lock taken to compute it.
	down := r.Stats()
	if down.Up || r.Status() == nil {
		t.Fatalf("Redis not marked down after a failed store: %+v, status %v", down, r.Status())
	}
	if down.Errors["lock"] != 1 {
		t.Errorf("lock errors = %d, want 1: the release that stores the value", down.Errors["lock"])
	}

	// While it is known to be down, Fetch computes without calling it.
	for range 5 {
		fetch(testKey(t), focusgate.CacheMiss)
	}
	after := r.Stats()
	if got := after.Skipped - down.Skipped; got != 10 {
		t.Errorf("%d calls skipped, want 10: a get and a set per Fetch", got)
	}
	for _, op := range []string{"get", "set", "lock", "wait"} {
		if after.Errors[op] != down.Errors[op] {
			t.Errorf("%s errors went from %d to %d: calls were sent to a Redis known to be down",
				op, down.Errors[op], after.Errors[op])
		}
	}

	srv.Restart()
	waitFor(t, "the probe to see Redis up", func() bool { return r.Status() == nil })
	key := testKey(t)
	fetch(key, focusgate.CacheMiss)
	fetch(key, focusgate.CacheHit)
}

func TestRedisDownAtStartIsProbedUntilUp(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	r := cachetest.NewStore(t, srv.URL())
	waitFor(t, "the first probe to find Redis down", func() bool { return r.Status() != nil })
	c := cache.New(r, nil)
	compute := func(context.Context) ([]byte, error) { return []byte("selection"), nil }
	if _, out, err := c.Fetch(t.Context(), testKey(t), compute); err != nil || out != focusgate.CacheMiss {
		t.Fatalf("Fetch with Redis down = %q, %v; want an uncached miss", out, err)
	}

	srv.Restart()
	waitFor(t, "the probe to see Redis up", func() bool { return r.Status() == nil })
	key := testKey(t)
	for _, want := range []focusgate.CacheOutcome{focusgate.CacheMiss, focusgate.CacheHit} {
		if _, out, err := c.Fetch(t.Context(), key, compute); err != nil || out != want {
			t.Fatalf("Fetch = %q, %v; want %q", out, err, want)
		}
	}
}
