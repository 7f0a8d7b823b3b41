package bufpool

import "testing"

func TestClass(t *testing.T) {
	for _, tc := range []struct {
		n, want int
	}{
		{0, -1},
		{1, 0},
		{4 << 10, 0},
		{4<<10 + 1, 1},
		{190 << 10, 6}, // 256 KiB
		{MaxSize, maxShift - minShift},
		{MaxSize + 1, -1},
	} {
		c := class(tc.n)
		if c != tc.want {
			t.Errorf("class(%d) = %d, want %d", tc.n, c, tc.want)
		}
		if c >= 0 && (1<<(c+minShift) < tc.n || c > 0 && 1<<(c-1+minShift) >= tc.n) {
			t.Errorf("class %d is not the smallest that holds %d bytes", c, tc.n)
		}
	}
}

// Get hands out a buffer of its size's class, given back or new; a slice of
// another capacity, or too large for a pool, is left to the collector.
func TestGetPut(t *testing.T) {
	b := Get(5000)
	if len(b) != 5000 || cap(b) != 8<<10 {
		t.Fatalf("Get(5000): len %d, cap %d; want 5000, 8192", len(b), cap(b))
	}
	Put(b)
	if again := Get(6000); len(again) != 6000 || cap(again) != 8<<10 {
		t.Errorf("Get(6000) after Put: len %d, cap %d; want 6000, 8192", len(again), cap(again))
	}
	if big := Get(MaxSize + 1); len(big) != MaxSize+1 {
		t.Errorf("Get(MaxSize+1): len %d", len(big))
	}
	Put(make([]byte, 5000)) // not a pool's size: ignored
	if odd := Get(5000); cap(odd) != 8<<10 {
		t.Errorf("a slice of another capacity went into a pool: cap %d", cap(odd))
	}
}
