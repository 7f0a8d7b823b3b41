package cache

import (
	"testing"
	"time"
)

func TestSlownessNeedsARunOfSlowRoundTripsSpanningItsWindow(t *testing.T) {
	const after, span = time.Second, time.Minute
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
