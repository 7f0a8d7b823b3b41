package cache

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// holds reports which of keys m returns a value for, in order.
func holds(t *testing.T, m *Memory, keys ...string) []string {
	t.Helper()
	var held []string
	for _, k := range keys {
		_, err := m.Get(t.Context(), k)
		switch {
		case err == nil:
			held = append(held, k)
		case !errors.Is(err, ErrNotFound):
			t.Fatalf("Get(%q): %v", k, err)
		}
	}
	return held
}

func TestMemoryGetSet(t *testing.T) {
	m := NewMemory(1<<20, time.Hour)
	ctx := t.Context()
	if _, err := m.Get(ctx, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get on empty store: err = %v, want ErrNotFound", err)
	}
	val := []byte("first")
	if err := m.Set(ctx, "k", val); err != nil {
		t.Fatal(err)
	}
	val[0] = 'X' // the store must have kept its own copy
	if got, err := m.Get(ctx, "k"); err != nil || string(got) != "first" {
		t.Fatalf("Get = %q, %v; want %q", got, err, "first")
	}
	if err := m.Set(ctx, "k", []byte("second, longer")); err != nil {
		t.Fatal(err)
	}
	if got, err := m.Get(ctx, "k"); err != nil || string(got) != "second, longer" {
		t.Fatalf("Get after overwrite = %q, %v", got, err)
	}
	if want := entrySize("k", []byte("second, longer")); m.used != want {
		t.Errorf("used = %d after overwrite, want %d: the old value must no longer count", m.used, want)
	}
}

func TestMemoryEvictsLeastRecentlyUsed(t *testing.T) {
	val := make([]byte, 100)
	m := NewMemory(3*entrySize("a", val), time.Hour) // room for exactly three
	ctx := t.Context()
	for _, k := range []string{"a", "b", "c"} {
		if err := m.Set(ctx, k, val); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Get(ctx, "a"); err != nil { // a is now more recent than b
		t.Fatal(err)
	}
	if err := m.Set(ctx, "d", val); err != nil {
		t.Fatal(err)
	}
	if got, want := holds(t, m, "a", "b", "c", "d"), []string{"a", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("holds %v, want %v", got, want)
	}
}

func TestMemoryStaysWithinBoundUnderManyKeys(t *testing.T) {
	const maxBytes = 64 << 10
	m := NewMemory(maxBytes, time.Hour)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20_000 {
		key := Key("bound", fmt.Sprint(i))
		if err := m.Set(t.Context(), key, make([]byte, rng.IntN(2000))); err != nil {
			t.Fatal(err)
		}
		if m.used > maxBytes {
			t.Fatalf("after %d keys: %d bytes used, bound %d", i+1, m.used, maxBytes)
		}
	}
	var sum int64
	for el := m.order.Front(); el != nil; el = el.Next() {
		e := el.Value.(*memEntry)
		sum += entrySize(e.key, e.val)
	}
	if sum != m.used || len(m.entries) != m.order.Len() {
		t.Errorf("accounting drifted: used %d, entries sum to %d; %d map entries, %d list elements",
			m.used, sum, len(m.entries), m.order.Len())
	}
	if len(m.entries) == 0 {
		t.Error("store is empty: eviction removed more than needed")
	}
}

func TestMemoryIgnoresValueLargerThanBound(t *testing.T) {
	m := NewMemory(1000, time.Hour)
	ctx := t.Context()
	if err := m.Set(ctx, "small", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := m.Set(ctx, "huge", make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if got, want := holds(t, m, "small", "huge"), []string{"small"}; !slices.Equal(got, want) {
		t.Errorf("holds %v, want %v: a value that cannot fit must not evict the others", got, want)
	}
}

func TestMemoryExpiresAfterTTL(t *testing.T) {
	tests := []struct {
		name string
		ttl  time.Duration
		age  time.Duration
		want bool
	}{
		{"fresh", time.Minute, 0, true},
		{"just before the TTL", time.Minute, time.Minute - time.Nanosecond, true},
		{"at the TTL", time.Minute, time.Minute, false},
		{"long after", time.Minute, 48 * time.Hour, false},
		{"no TTL", 0, 10 * 365 * 24 * time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			m := NewMemory(1<<20, tt.ttl)
			m.now = func() time.Time { return now }
			if err := m.Set(t.Context(), "k", []byte("v")); err != nil {
				t.Fatal(err)
			}
			now = now.Add(tt.age)
			_, err := m.Get(t.Context(), "k")
			if got := err == nil; got != tt.want {
				t.Fatalf("held after %v: %v (err %v), want %v", tt.age, got, err, tt.want)
			}
			if !tt.want && m.used != 0 {
				t.Errorf("expired entry still counts %d bytes", m.used)
			}
		})
	}
}
