package cache

import (
	"testing"
	"time"
)

func TestThrottleLetsOneLinePerInterval(t *testing.T) {
	th := throttle{every: time.Minute}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		at             time.Duration
		wantOK         bool
		wantSuppressed int
	}{
		{0, true, 0},
		{time.Second, false, 0},
		{time.Minute - time.Nanosecond, false, 0},
		{time.Minute, true, 2},
		{time.Minute + time.Second, false, 0},
		{time.Hour, true, 1},
		{2 * time.Hour, true, 0},
	}
	for _, s := range steps {
		suppressed, ok := th.allow(start.Add(s.at))
		if ok != s.wantOK || suppressed != s.wantSuppressed {
			t.Errorf("at %v: allow = %d, %v; want %d, %v", s.at, suppressed, ok, s.wantSuppressed, s.wantOK)
		}
	}
}
