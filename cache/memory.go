package cache

import (
	"bytes"
	"container/list"
	"context"
	"sync"
	"time"
)

// entryOverhead is what an entry costs beyond its key and value bytes: its
// map slot, list element and entry struct, rounded up to allocator size
// classes. Counting it keeps the bound honest when values are small.
const entryOverhead = 160

// Memory is an in-process Store bounded in bytes: when a Set would exceed the
// bound, the least recently used entries are evicted. Entries also expire
// after the TTL given to NewMemory, so a selection is not kept longer than it
// would be in Redis.
type Memory struct {
	maxBytes int64
	ttl      time.Duration
	now      func() time.Time

	mu      sync.Mutex
	used    int64
	order   list.List                // of *memEntry, most recently used first
	entries map[string]*list.Element // by key
}

type memEntry struct {
	key     string
	val     []byte
	expires time.Time // zero: never
}

// NewMemory returns an empty Memory holding at most maxBytes, counting each
// entry's key, value and a fixed overhead. A ttl of zero or less keeps
// entries until they are evicted.
func NewMemory(maxBytes int64, ttl time.Duration) *Memory {
	return &Memory{maxBytes: maxBytes, ttl: ttl, now: time.Now, entries: make(map[string]*list.Element)}
}

// Get returns the value under key, or ErrNotFound if there is none or it has
// expired.
func (m *Memory) Get(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.entries[key]
	if !ok {
		return nil, ErrNotFound
	}
	e := el.Value.(*memEntry)
	if !e.expires.IsZero() && !m.now().Before(e.expires) {
		m.remove(el)
		return nil, ErrNotFound
	}
	m.order.MoveToFront(el)
	return e.val, nil
}

func (m *Memory) held(key string) ([]byte, error) {
	return m.Get(context.Background(), key)
}

// Set stores a copy of val under key, evicting least recently used entries
// as needed. A value too large for the whole bound is not stored: evicting
// everything else for it would not make it fit.
func (m *Memory) Set(_ context.Context, key string, val []byte) error {
	size := entrySize(key, val)
	if size > m.maxBytes {
		return nil
	}
	e := &memEntry{key: key, val: bytes.Clone(val)}
	if m.ttl > 0 {
		e.expires = m.now().Add(m.ttl)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.entries[key]; ok {
		m.remove(el)
	}
	m.entries[key] = m.order.PushFront(e)
	m.used += size
	for m.used > m.maxBytes {
		m.remove(m.order.Back())
	}
	return nil
}

// Delete removes the value under key, if any.
func (m *Memory) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.entries[key]; ok {
		m.remove(el)
	}
	return nil
}

func (m *Memory) remove(el *list.Element) {
	e := m.order.Remove(el).(*memEntry)
	delete(m.entries, e.key)
	m.used -= entrySize(e.key, e.val)
}

func entrySize(key string, val []byte) int64 {
	return int64(len(key)+len(val)) + entryOverhead
}
