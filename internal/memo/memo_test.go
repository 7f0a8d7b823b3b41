package memo

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// held is what m holds by its own accounting, checked against the sizes of
// the entries it has.
func held[V any](t *testing.T, m *Memo[V]) int {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	sum := 0
	for k, e := range m.cur {
		if e.size < len(k)+EntryOverhead {
			t.Fatalf("entry %q counts %d bytes, less than its key and overhead", k, e.size)
		}
		sum += e.size
	}
	if sum != m.curBytes {
		t.Fatalf("current generation counts %d bytes, its entries %d", m.curBytes, sum)
	}
	for _, e := range m.old {
		sum += e.size
	}
	return sum
}

func TestMemoStaysWithinItsBound(t *testing.T) {
	const bound = 8 << 10
	m := New[int](bound)
	for i := range 5000 {
		key := strings.Repeat("x", i%300) + fmt.Sprint(i)
		m.Put(key, i, i%50)
		if got, ok := m.Get(key); !ok || got != i {
			t.Fatalf("Get(%q) right after Put = %d, %v", key, got, ok)
		}
		if n := held(t, m); n > bound {
			t.Fatalf("after %d entries the memo holds %d bytes, bound %d", i+1, n, bound)
		}
	}
}

func TestMemoKeepsWhatIsInUse(t *testing.T) {
	m := New[int](4 << 10) // 2 KiB a generation: 16 entries of 128 bytes
	m.Put("page", 1, 0)
	for i := range 1000 {
		m.Put(fmt.Sprint("other ", i), i, 64)
		if i%8 == 0 {
			if _, ok := m.Get("page"); !ok {
				t.Fatalf("a key looked up every 8 entries was forgotten after %d", i)
			}
		}
	}
	if _, ok := m.Get("other 0"); ok {
		t.Errorf("an entry unused for 1000 others is still held")
	}
	if n := m.Len(); n > 2*(2<<10)/(64+EntryOverhead) {
		t.Errorf("Len = %d, more than two generations hold", n)
	}
}

func TestMemoOwnsItsKeys(t *testing.T) {
	m := New[int](1 << 20)
	buf := []byte("the text of a request")
	m.Put(unsafe.String(&buf[0], len(buf)), 1, 0)
	buf[0] = 'T' // the request's buffer is reused
	if _, ok := m.Get("the text of a request"); !ok {
		t.Fatalf("the key changed with the caller's buffer")
	}
	if _, ok := m.GetBytes([]byte("the text of a request")); !ok {
		t.Fatalf("GetBytes does not find the key Get finds")
	}
	m.PutBytes(buf, 2, 0)
	buf[0] = 'X'
	if v, ok := m.Get("The text of a request"); !ok || v != 2 {
		t.Fatalf("a key stored with PutBytes changed with the caller's buffer: %d, %v", v, ok)
	}
}

func TestMemoOversizedEntriesAreNotKept(t *testing.T) {
	m := New[string](1 << 10)
	m.Put("small", "v", 0)
	m.Put("big", "v", 600) // more than a generation
	if _, ok := m.Get("big"); ok {
		t.Errorf("an entry larger than a generation was kept")
	}
	if _, ok := m.Get("small"); !ok {
		t.Errorf("storing an oversized entry dropped the others")
	}
}

func TestMemoGetAllAndPutAll(t *testing.T) {
	m := New[int](1 << 20)
	m.PutAll(maps.All(map[string]int{"a": 1, "b": 2}))
	var got []string
	m.GetAll(slices.Values([]string{"a", "c", "b"}), func(k string, v int, ok bool) {
		got = append(got, fmt.Sprint(k, "=", v, ",", ok))
	})
	if want := []string{"a=1,true", "c=0,false", "b=2,true"}; !slices.Equal(got, want) {
		t.Errorf("GetAll = %v, want %v", got, want)
	}
}

func TestNilMemoRemembersNothing(t *testing.T) {
	m := New[int](0)
	if m != nil {
		t.Fatalf("New(0) = %v, want nil", m)
	}
	m.Put("a", 1, 0)
	m.PutBytes([]byte("c"), 3, 0)
	m.PutAll(maps.All(map[string]int{"b": 2}))
	if _, ok := m.Get("a"); ok {
		t.Errorf("nil memo found a key")
	}
	if _, ok := m.GetBytes([]byte("b")); ok {
		t.Errorf("nil memo found a key")
	}
	calls := 0
	m.GetAll(slices.Values([]string{"a", "b"}), func(_ string, _ int, ok bool) {
		calls++
		if ok {
			t.Errorf("nil memo found a key")
		}
	})
	if m.Len() != 0 {
		t.Errorf("nil memo has %d entries", m.Len())
	}
	if calls != 2 {
		t.Errorf("GetAll on a nil memo called f %d times, want 2", calls)
	}
}

func TestMemoConcurrentUse(t *testing.T) {
	const bound = 16 << 10
	m := New[int](bound)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				key := fmt.Sprint(i % 300)
				if v, ok := m.Get(key); ok && v != i%300 {
					t.Errorf("goroutine %d: Get(%q) = %d", g, key, v)
					return
				}
				m.Put(key, i%300, 16)
			}
		})
	}
	wg.Wait()
	if n := held(t, m); n > bound {
		t.Errorf("memo holds %d bytes, bound %d", n, bound)
	}
}

// TestMemoUpdateLosesNothing has goroutines each add to one list: every
// addition is in it, and the memo's accounting follows the list's growth.
func TestMemoUpdateLosesNothing(t *testing.T) {
	m := New[[]int](1 << 20)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				m.Update([]byte("list"), func(list []int, _ bool) ([]int, int) {
					list = append(slices.Clip(list), g*100+i)
					return list, 8 * len(list)
				})
			}
		})
	}
	wg.Wait()
	list, _ := m.Get("list")
	list = slices.Sorted(slices.Values(list))
	for i, v := range list {
		if v != i {
			t.Fatalf("the list holds %d values, not each of the 800 added once: %v", len(list), list)
		}
	}
	if len(list) != 800 {
		t.Errorf("the list holds %d values, want the 800 added", len(list))
	}
	if n := held(t, m); n != len("list")+8*800+EntryOverhead {
		t.Errorf("memo holds %d bytes, want the list's %d", n, len("list")+8*800+EntryOverhead)
	}
}

func TestMemoUpdate(t *testing.T) {
	m := New[string](1 << 10)
	add := func(key, s string) {
		m.Update([]byte(key), func(v string, ok bool) (string, int) {
			if ok {
				v += ","
			}
			return v + s, len(v) + len(s)
		})
	}
	add("k", "a")
	add("k", "b")
	if v, _ := m.Get("k"); v != "a,b" {
		t.Errorf("after two updates: %q, want %q", v, "a,b")
	}

	// The entry moves to the old generation as others fill the current
	// one; an update finds it there and brings it back.
	for i := 0; m.old == nil || m.old["k"].v == ""; i++ {
		m.Put(fmt.Sprint("other", i), "v", 64)
	}
	add("k", "c")
	if v, _ := m.Get("k"); v != "a,b,c" {
		t.Errorf("after an update of an old entry: %q, want %q", v, "a,b,c")
	}
	if _, ok := m.old["k"]; ok {
		t.Errorf("the old generation still holds the updated entry")
	}

	// Grown past what a generation holds, the value is forgotten.
	m.Update([]byte("k"), func(v string, _ bool) (string, int) { return v, 1 << 10 })
	if _, ok := m.Get("k"); ok {
		t.Errorf("a value larger than a generation was kept")
	}
	held(t, m)

	var none *Memo[string]
	none.Update([]byte("k"), func(string, bool) (string, int) { t.Error("f called on a nil memo"); return "", 0 })
}
