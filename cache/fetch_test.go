package cache_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/cache/cachetest"
	"github.com/focusgate/focusgate/internal/redistest"
)

// stores lists the Store implementations that every Fetch guarantee must
// hold for.
var stores = []struct {
	name string
	new  func(t *testing.T) cache.Store
}{
	{"memory", func(*testing.T) cache.Store { return cache.NewMemory(1<<20, time.Hour) }},
	{"redis", func(t *testing.T) cache.Store { return cachetest.NewStore(t, redistest.Shared(t)) }},
}

// testKey returns a key no other test or earlier run uses, since a shared
// Redis outlives test runs.
func testKey(t testing.TB) string {
	return cache.Key(t.Name(), rand.Text())
}

type result struct {
	val []byte
	out focusgate.CacheOutcome
	err error
}

// goFetch runs Fetch on its own goroutine and delivers its result.
func goFetch(ctx context.Context, c *cache.Cache, key string, compute func(context.Context) ([]byte, error)) <-chan result {
	ch := make(chan result, 1)
	go func() {
		val, out, err := c.Fetch(ctx, key, compute)
		ch <- result{val, out, err}
	}()
	return ch
}

// poll returns nil once cond holds, or an error when ctx ends first. Unlike
// waitFor it may run on any goroutine.
func poll(ctx context.Context, what string, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up waiting for %s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

// waitFor fails the test unless cond comes to hold within a generous
// deadline.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if err := poll(t.Context(), what, cond); err != nil {
		t.Fatal(err)
	}
}

// receive returns the next value from ch, failing the test if none comes
// within a generous deadline.
func receive[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatal("gave up waiting for a result")
		panic("unreachable")
	}
}

func TestFetchSecondIdenticalCallIsAHit(t *testing.T) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			c := cache.New(s.new(t), nil)
			key := testKey(t)
			var calls atomic.Int32
			compute := func(context.Context) ([]byte, error) {
				calls.Add(1)
				return []byte("selection"), nil
			}
			for _, want := range []focusgate.CacheOutcome{focusgate.CacheMiss, focusgate.CacheHit} {
				val, out, err := c.Fetch(t.Context(), key, compute)
				if err != nil || out != want || string(val) != "selection" {
					t.Fatalf("Fetch = %q, %q, %v; want %q, %q, nil", val, out, err, "selection", want)
				}
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("compute ran %d times, want 1", n)
			}
		})
	}
}

// A value this process holds (Memory, or the front of Redis) is answered on
// the caller's goroutine: a hit starts no flight, whose goroutine, channel and
// context each allocate.
func TestFetchAnswersAHeldValueWithoutAFlight(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) cache.Store
	}{
		{"memory", func(*testing.T) cache.Store { return cache.NewMemory(1<<20, time.Hour) }},
		{"redis front", func(t *testing.T) cache.Store {
			return cachetest.NewStore(t, redistest.Shared(t), func(o *cache.RedisOptions) { o.FrontBytes = 1 << 20 })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cache.New(tc.store(t), nil)
			key := testKey(t)
			if _, _, err := c.Fetch(t.Context(), key, func(context.Context) ([]byte, error) { return []byte("selection"), nil }); err != nil {
				t.Fatal(err)
			}
			unused := func(context.Context) ([]byte, error) { panic("computed a held value") }
			ctx := t.Context()
			allocs := testing.AllocsPerRun(100, func() {
				val, out, err := c.Fetch(ctx, key, unused)
				if err != nil || out != focusgate.CacheHit || string(val) != "selection" {
					t.Fatalf("Fetch = %q, %q, %v; want a hit", val, out, err)
				}
			})
			if allocs != 0 {
				t.Errorf("a hit allocates %v times, want 0: it went through a flight", allocs)
			}
		})
	}
}

func TestFetchComputesOnceForConcurrentCalls(t *testing.T) {
	const callers = 20
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			c := cache.New(s.new(t), nil)
			key := testKey(t)
			var calls atomic.Int32
			release := make(chan struct{})
			compute := func(context.Context) ([]byte, error) {
				calls.Add(1)
				<-release
				return []byte("selection"), nil
			}
			var results []<-chan result
			for range callers {
				results = append(results, goFetch(t.Context(), c, key, compute))
			}
			waitFor(t, "every caller to wait", func() bool { return c.Waiting(key) == callers })
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
				t.Errorf("compute ran %d times, want 1", n)
			}
			if want := map[focusgate.CacheOutcome]int{focusgate.CacheMiss: 1, focusgate.CacheShared: callers - 1}; fmt.Sprint(outcomes) != fmt.Sprint(want) {
				t.Errorf("outcomes %v, want %v", outcomes, want)
			}
		})
	}
}

func TestFetchCallerThatGivesUpDoesNotCancelOthers(t *testing.T) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			c := cache.New(s.new(t), nil)
			key := testKey(t)
			release := make(chan struct{})
			compute := func(ctx context.Context) ([]byte, error) {
				select {
				case <-release:
					return []byte("selection"), nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			impatient, giveUp := context.WithCancel(t.Context())
			first := goFetch(impatient, c, key, compute)
			waitFor(t, "the first caller to start the computation", func() bool { return c.Waiting(key) == 1 })
			second := goFetch(t.Context(), c, key, compute)
			waitFor(t, "the second caller to join it", func() bool { return c.Waiting(key) == 2 })

			giveUp()
			// The computation is still blocked, so this result cannot have
			// waited for it.
			if r := receive(t, first); !errors.Is(r.err, context.Canceled) {
				t.Fatalf("caller that gave up got %q, %q, %v; want context.Canceled", r.val, r.out, r.err)
			}
			close(release)
			if r := receive(t, second); r.err != nil || r.out != focusgate.CacheShared || string(r.val) != "selection" {
				t.Fatalf("remaining caller got %q, %q, %v; want the shared selection", r.val, r.out, r.err)
			}
		})
	}
}

func TestFetchCancelsComputationWhenEveryCallerGivesUp(t *testing.T) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			c := cache.New(s.new(t), nil)
			key := testKey(t)
			computing := make(chan context.Context, 1)
			compute := func(ctx context.Context) ([]byte, error) {
				computing <- ctx
				<-ctx.Done()
				return nil, ctx.Err()
			}
			ctx1, cancel1 := context.WithCancel(t.Context())
			ctx2, cancel2 := context.WithCancel(t.Context())
			r1 := goFetch(ctx1, c, key, compute)
			r2 := goFetch(ctx2, c, key, compute)
			computeCtx := receive(t, computing)
			waitFor(t, "both callers to wait", func() bool { return c.Waiting(key) == 2 })

			cancel1()
			receive(t, r1)
			if err := computeCtx.Err(); err != nil {
				t.Fatalf("computation cancelled while a caller still waits: %v", err)
			}
			cancel2()
			receive(t, r2)
			receive(t, computeCtx.Done())

			// A later call starts afresh instead of joining the abandoned one.
			val, out, err := c.Fetch(t.Context(), key, func(context.Context) ([]byte, error) {
				return []byte("fresh"), nil
			})
			if err != nil || out != focusgate.CacheMiss || string(val) != "fresh" {
				t.Fatalf("Fetch after abandonment = %q, %q, %v; want a fresh miss", val, out, err)
			}
		})
	}
}

func TestFetchDoesNotStoreFailures(t *testing.T) {
	c := cache.New(cache.NewMemory(1<<20, time.Hour), slog.New(slog.DiscardHandler))
	errRetriever := errors.New("retriever down")
	tests := []struct {
		name    string
		compute func(context.Context) ([]byte, error)
		wantErr string
	}{
		{"error", func(context.Context) ([]byte, error) { return nil, errRetriever }, errRetriever.Error()},
		{"panic", func(context.Context) ([]byte, error) { panic("parser bug") }, "compute panicked: parser bug"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := testKey(t)
			_, _, err := c.Fetch(t.Context(), key, tt.compute)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Fetch error = %v, want one containing %q", err, tt.wantErr)
			}
			val, out, err := c.Fetch(t.Context(), key, func(context.Context) ([]byte, error) {
				return []byte("retried"), nil
			})
			if err != nil || out != focusgate.CacheMiss || string(val) != "retried" {
				t.Fatalf("Fetch after failure = %q, %q, %v; want a new computation", val, out, err)
			}
		})
	}
}

// A failed computation is still reported as paid for: by the caller that ran
// it (Miss) and not by those that waited for it (Shared), so that metrics
// count failed retriever calls once.
func TestFetchFailureOutcomes(t *testing.T) {
	c := cache.New(cache.NewMemory(1<<20, time.Hour), slog.New(slog.DiscardHandler))
	key := testKey(t)
	release := make(chan struct{})
	started := make(chan struct{})
	errDown := errors.New("retriever down")
	compute := func(context.Context) ([]byte, error) {
		close(started)
		<-release
		return nil, errDown
	}
	type result struct {
		out focusgate.CacheOutcome
		err error
	}
	first := make(chan result)
	go func() {
		_, out, err := c.Fetch(t.Context(), key, compute)
		first <- result{out, err}
	}()
	<-started
	second := make(chan result)
	go func() {
		_, out, err := c.Fetch(t.Context(), key, compute)
		second <- result{out, err}
	}()
	waitFor(t, "the second caller to join", func() bool { return c.Waiting(key) == 2 })
	close(release)
	if r := <-first; r.out != focusgate.CacheMiss || !errors.Is(r.err, errDown) {
		t.Errorf("computing caller: %q, %v; want miss and the error", r.out, r.err)
	}
	if r := <-second; r.out != focusgate.CacheShared || !errors.Is(r.err, errDown) {
		t.Errorf("waiting caller: %q, %v; want shared and the error", r.out, r.err)
	}
}
