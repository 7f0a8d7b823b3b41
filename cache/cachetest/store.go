// Package cachetest builds cache stores for tests: a Redis store on a test's
// redis-server (see internal/redistest) with bounds a loaded test machine can
// keep, closed when the test ends.
package cachetest

import (
	"log/slog"
	"testing"
	"time"

	"github.com/focusgate/focusgate/cache"
)

// CallTimeout bounds each Redis call of a store built by NewStore. The
// production bound (tens of milliseconds) is there so that a slow Redis costs
// a request little; on a loaded test machine a healthy local Redis can take
// that long, and a test would see an outage that did not happen. Tests about
// an outage stop the server instead of relying on a timeout.
const CallTimeout = 5 * time.Second

// NewStore returns a Redis cache store on url for one test, closed when the
// test ends. Calls are bounded by CallTimeout, a server that is down is
// probed every 10 ms so that tests see it come back at once, and failures are
// not logged. configure may change any option.
func NewStore(tb testing.TB, url string, configure ...func(*cache.RedisOptions)) *cache.Redis {
	tb.Helper()
	opts := cache.RedisOptions{
		URL:           url,
		Timeout:       CallTimeout,
		ProbeInterval: 10 * time.Millisecond,
		// Tests of what Redis does see Redis: no in-process front serves
		// a value it lost. The front's own tests turn it on.
		FrontBytes: -1,
		Logger:     slog.New(slog.DiscardHandler),
	}
	for _, c := range configure {
		c(&opts)
	}
	r, err := cache.NewRedis(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := r.Close(); err != nil {
			tb.Errorf("redistest: closing the store: %v", err)
		}
	})
	return r
}
