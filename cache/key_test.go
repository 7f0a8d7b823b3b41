package cache_test

import (
	"strings"
	"testing"

	"github.com/focusgate/focusgate/cache"
)

// TestKeysStayTheSame pins what Key makes of its parts: keys are stored in
// Redis, so a gateway of the next version must find what this one stored.
// The long parts cross the buffer the parts are hashed through.
func TestKeysStayTheSame(t *testing.T) {
	tests := []struct {
		name  string
		parts []string
		want  string
	}{
		{"no parts", nil, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"a selection's key", []string{"v3", "gpt-4.1-mini", "line", "", "x"}, "300fe6f8028f1b7273da6c545826945071ecfc7e94f24e40f10ba36da4302db0"},
		{"parts split one way", []string{"ab", "c"}, "601d5476e2ccfe2c87a2bba7a322659734a05749d5b5aa781f513e4912db0d5f"},
		{"and the other", []string{"a", "bc"}, "3fafa1cf2f19a7c1129beb20cf0983f73a489a221fc0dd2f16d1be292d089205"},
		{"parts longer than a buffer", []string{strings.Repeat("é", 5000), strings.Repeat("x", 4089), "y"}, "b201787d4afee5c993e9a3d7e19e64e4c4ee5cd258852e83350f2ad11ee0fe05"},
	}
	for _, tt := range tests {
		if got := cache.Key(tt.parts...); got != tt.want {
			t.Errorf("%s: Key = %s, want %s", tt.name, got, tt.want)
		}
	}
}

// A key of parts that fit its buffer, as a selection's do, costs one
// allocation, the key itself: a tool loop's request builds one for each of
// its pages.
func TestAShortKeyAllocatesOnlyItself(t *testing.T) {
	parts := []string{"v3", "gpt-4.1-mini", "line", strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)}
	if n := testing.AllocsPerRun(100, func() { cache.Key(parts...) }); n != 1 {
		t.Errorf("Key allocated %v times, want once", n)
	}
}
