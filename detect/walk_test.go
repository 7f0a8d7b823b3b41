package detect

import (
	"testing"

	"github.com/focusgate/focusgate"
)

// Every API the gateway routes has its walker, and only one: a body of an
// API without one would pass through unread.
func TestEveryAPIHasAWalker(t *testing.T) {
	seen := map[focusgate.API]int{}
	for _, w := range walkers {
		seen[w.api]++
	}
	for _, api := range focusgate.APIs {
		if seen[api] != 1 {
			t.Errorf("%v has %d walkers, want 1", api, seen[api])
		}
	}
	if len(walkers) != len(focusgate.APIs) {
		t.Errorf("%d walkers for %d APIs", len(walkers), len(focusgate.APIs))
	}
}
