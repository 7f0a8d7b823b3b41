package cache_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/cache/cachetest"
	"github.com/focusgate/focusgate/internal/redistest"
)

// The benchmarks in this file measure the cache where it has been seen to
// fail, with production timeouts; BENCHMARKS.md has the figures. They use
// only what the store has long exported, so that an older tree can run the
// same file for comparison.

// quietRedisLog keeps go-redis's own log lines (a failed dial, from its
// pool) out of the benchmark's report.
type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}

// BenchmarkClusterColdStart starts two gateway replicas at once on a
// three-master Redis Cluster, each store cold (no connection, no slot map),
// and sends both the same new pages at once: each iteration is one cold
// start. A retriever call takes retrieverTime. Ideally every page is
// computed once, and no request waits much longer than one retriever call;
// a replica that stops trusting Redis while it holds locks used to leave
// the other waiting until the locks expired (5 s), and then compute again.
func BenchmarkClusterColdStart(b *testing.B) {
	const (
		pages         = 8
		perPage       = 4 // requests for each page, on each replica
		retrieverTime = 300 * time.Millisecond
	)
	redis.SetLogger(quietRedisLog{})
	cl := redistest.StartCluster(b, 3)
	var (
		computes atomic.Int64
		worst    []time.Duration // slowest request of each cold start
		all      []time.Duration
		stalled  int // requests that took over a second more than a retriever call
	)
	compute := func(ctx context.Context) ([]byte, error) {
		computes.Add(1)
		select {
		case <-time.After(retrieverTime):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return []byte(`{"ranges":[[1,3]]}`), nil
	}
	for b.Loop() {
		var replicas []*cache.Cache
		for range 2 {
			r := cachetest.NewStore(b, cl.URL(), productionTimeouts, func(o *cache.RedisOptions) { o.Cluster = true })
			replicas = append(replicas, cache.New(r, nil))
		}
		keys := make([]string, pages)
		for i := range keys {
			keys[i] = testKey(b)
		}
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		start := time.Now()
		for _, c := range replicas {
			for _, key := range keys {
				for range perPage {
					wg.Go(func() {
						ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
						defer cancel()
						if _, _, err := c.Fetch(ctx, key, compute); err != nil {
							b.Error(err)
						}
						d := time.Since(start)
						mu.Lock()
						lat = append(lat, d)
						mu.Unlock()
					})
				}
			}
		}
		wg.Wait()
		worst = append(worst, slices.Max(lat))
		all = append(all, lat...)
		for _, d := range lat {
			if d > retrieverTime+time.Second {
				stalled++
			}
		}
	}
	slices.Sort(all)
	slices.Sort(worst)
	b.ReportMetric(float64(computes.Load())/float64(pages*b.N), "computes/page")
	b.ReportMetric(ms(all[len(all)/2]), "p50-ms")
	b.ReportMetric(ms(worst[len(worst)-1]), "worst-ms")
	b.ReportMetric(float64(stalled)/float64(b.N), "stalled/op")
	b.Logf("%d cold starts: slowest request of each, ms: %v", b.N, fmtMs(worst))
}

// BenchmarkRedisHitsBesideCPUHog reads selections stored in a local Redis
// with production timeouts, from 32 concurrent requests, alone and beside
// goroutines that keep every CPU of the gateway busy (a gateway pruning
// large pages for other requests). A look-up that Redis answers is a hit;
// one skipped because the store marked Redis down or slow is computed again,
// a miss. The hit share should stay at 1.
func BenchmarkRedisHitsBesideCPUHog(b *testing.B) {
	redis.SetLogger(quietRedisLog{})
	for _, hogs := range []int{0, 2 * runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("hogs=%d", hogs), func(b *testing.B) {
			downs := &downCounter{reasons: map[string]int{}}
			r := cachetest.NewStore(b, redistest.Start(b).URL(), productionTimeouts, func(o *cache.RedisOptions) {
				o.Logger = slog.New(downs)
				o.LogInterval = time.Nanosecond
			})
			c := cache.New(r, nil)
			keys := make([]string, 256)
			for i := range keys {
				keys[i] = testKey(b)
				if err := r.Set(b.Context(), keys[i], []byte(`{"ranges":[[1,3]]}`)); err != nil {
					b.Fatal(err)
				}
			}
			stop := make(chan struct{})
			var hogsDone sync.WaitGroup
			for range hogs {
				hogsDone.Go(func() {
					for x := 0; ; x++ {
						if x%1024 == 0 {
							select {
							case <-stop:
								return
							default:
							}
						}
					}
				})
			}
			var hits, lookups atomic.Int64
			skippedBefore := r.Stats().Skipped
			compute := func(context.Context) ([]byte, error) { return []byte(`{"ranges":[[1,3]]}`), nil }
			b.SetParallelism(16) // 16 per CPU: 32 concurrent requests on two
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					_, out, err := c.Fetch(ctx, keys[rand.IntN(len(keys))], compute)
					if err != nil {
						b.Error(err)
					}
					lookups.Add(1)
					if out == focusgate.CacheHit {
						hits.Add(1)
					}
				}
			})
			b.StopTimer()
			close(stop)
			hogsDone.Wait()
			b.ReportMetric(float64(hits.Load())/float64(lookups.Load()), "hits/lookup")
			b.ReportMetric(float64(r.Stats().Skipped-skippedBefore)/float64(lookups.Load()), "skipped/lookup")
			downs.mu.Lock()
			defer downs.mu.Unlock()
			b.ReportMetric(float64(downs.n), "downs")
			b.Logf("%d look-ups; marked down %d times: %v", lookups.Load(), downs.n, downs.reasons)
		})
	}
}

// BenchmarkRedisLookupsOnABusyHost reads selections stored in a local Redis
// with production timeouts, as a gateway serving requests does: each
// look-up follows some work of the request's own (allocating and hashing a
// page-sized body, which keeps the garbage collector busy), and workers
// pause between requests, so that Redis is often idle when a call comes.
// Run it beside processes that take the host's CPUs (two `yes > /dev/null`
// on two cores): the gateway's goroutines then often run long after
// Redis's answer came. Each iteration is one look-up; Redis should never be
// marked down, and no look-up skipped.
func BenchmarkRedisLookupsOnABusyHost(b *testing.B) {
	redis.SetLogger(quietRedisLog{})
	const body = 2 << 20
	for _, load := range []struct {
		name    string
		workers int
		pause   time.Duration
	}{
		{"sparse", 1, 50 * time.Millisecond},
		{"steady", 8, 20 * time.Millisecond},
	} {
		b.Run(load.name, func(b *testing.B) {
			downs := &downCounter{reasons: map[string]int{}}
			r := cachetest.NewStore(b, redistest.Shared(b), productionTimeouts, func(o *cache.RedisOptions) {
				o.Logger = slog.New(downs)
				o.LogInterval = time.Nanosecond
			})
			c := cache.New(r, nil)
			keys := make([]string, 256)
			for i := range keys {
				keys[i] = testKey(b)
				if err := r.Set(b.Context(), keys[i], []byte(`{"ranges":[[1,3]]}`)); err != nil {
					b.Fatal(err)
				}
			}
			compute := func(context.Context) ([]byte, error) { return []byte(`{"ranges":[[1,3]]}`), nil }
			before := r.Stats()
			lookups := make(chan int)
			var wg sync.WaitGroup
			b.ResetTimer()
			for range load.workers {
				wg.Go(func() {
					page := make([]byte, body)
					for i := range lookups {
						for j := range page {
							page[j] = byte(i + j)
						}
						_ = cache.Key(string(page))
						if _, _, err := c.Fetch(b.Context(), keys[i%len(keys)], compute); err != nil {
							b.Error(err)
						}
						time.Sleep(load.pause) // the gap between one worker's requests
					}
				})
			}
			for i := range b.N {
				lookups <- i
			}
			close(lookups)
			wg.Wait()
			b.StopTimer()
			after := r.Stats()
			var errs int64
			for op, n := range after.Errors {
				errs += n - before.Errors[op]
			}
			downs.mu.Lock()
			defer downs.mu.Unlock()
			b.ReportMetric(float64(downs.n)/float64(b.N), "downs/lookup")
			b.ReportMetric(float64(after.Skipped-before.Skipped)/float64(b.N), "skipped/lookup")
			b.ReportMetric(float64(errs)/float64(b.N), "failed-calls/lookup")
			b.Logf("%d look-ups: marked down %d times %v, %d calls skipped, %d failed", b.N, downs.n, downs.reasons, after.Skipped-before.Skipped, errs)
		})
	}
}

// downCounter is a log handler that counts the times the store marks Redis
// down, by the kind of error.
type downCounter struct {
	mu      sync.Mutex
	n       int
	reasons map[string]int
}

func (*downCounter) Enabled(context.Context, slog.Level) bool { return true }
func (d *downCounter) WithAttrs([]slog.Attr) slog.Handler     { return d }
func (d *downCounter) WithGroup(string) slog.Handler          { return d }
func (d *downCounter) Handle(_ context.Context, rec slog.Record) error {
	if !strings.Contains(rec.Message, "requests go on uncached while it is down") {
		return nil
	}
	wasUp, reason := false, ""
	rec.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "was_up":
			wasUp = a.Value.Bool()
		case "err":
			reason = a.Value.String()
			for _, kind := range []string{"too slowly", "pool timeout", "i/o timeout", "refused"} {
				if strings.Contains(reason, kind) {
					reason = kind
				}
			}
		}
		return true
	})
	if wasUp {
		d.mu.Lock()
		d.n++
		d.reasons[reason]++
		d.mu.Unlock()
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fmtMs(ds []time.Duration) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = d.Milliseconds()
	}
	return out
}
