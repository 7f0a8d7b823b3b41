package cache

import (
	"math"
	"runtime/metrics"
	"testing"
	"time"
)

func TestSlownessNeedsARunOfSlowRoundTripsSpanningItsWindow(t *testing.T) {
	const after, span = time.Second, time.Minute // slow means slow; the runtime is never that starved here
	t0 := time.Now()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	tests := []struct {
		name  string
		trips []struct {
			rtt time.Duration
			end time.Duration
		}
		want bool
	}{
		{"three slow round trips spanning the window", trips(after+1, 0, after+1, span/2, after+1, span), true},
		{"slow for the window, but only two round trips", trips(after+1, 0, after+1, span), false},
		{"three slow round trips within less than the window", trips(after+1, 0, after+1, 1, after+1, span-1), false},
		{"a round trip in time ends the run", trips(after+1, 0, after+1, span/2, after, span/2+1, after+1, span), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := slowness{after: after, span: span}
			got := false
			for _, tr := range tt.trips {
				got = s.observe(tr.rtt, at(tr.end))
			}
			if got != tt.want {
				t.Errorf("Redis judged slow: %v, want %v", got, tt.want)
			}
		})
	}
}

// trips pairs its arguments as (round trip, end) durations.
func trips(d ...time.Duration) []struct{ rtt, end time.Duration } {
	var out []struct{ rtt, end time.Duration }
	for i := 0; i+1 < len(d); i += 2 {
		out = append(out, struct{ rtt, end time.Duration }{d[i], d[i+1]})
	}
	return out
}

func TestMedianSince(t *testing.T) {
	buckets := []float64{math.Inf(-1), 0, 0.001, 0.010, 0.100, math.Inf(1)}
	hist := func(counts ...uint64) *metrics.Float64Histogram {
		return &metrics.Float64Histogram{Counts: counts, Buckets: buckets}
	}
	tests := []struct {
		name          string
		before, after *metrics.Float64Histogram
		want          time.Duration
		wantOK        bool
	}{
		{"most waits under a millisecond", hist(0, 0, 0, 0, 0), hist(0, 90, 5, 5, 0), 0, true},
		{"most new waits of 10 ms or more", hist(0, 1000, 0, 0, 0), hist(0, 1010, 5, 30, 0), 10 * time.Millisecond, true},
		{"no new waits", hist(0, 7, 1, 0, 0), hist(0, 7, 1, 0, 0), 0, false},
		{"no histogram", nil, hist(0, 1, 0, 0, 0), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := medianSince(tt.before, tt.after)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("medianSince = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestTheRuntimeReportsSchedulingLatencies(t *testing.T) {
	if schedLatencies() == nil {
		t.Fatalf("runtime/metrics has no %s: slowness can no longer tell a busy gateway from a slow Redis", schedLatencyMetric)
	}
}
