// Package memo remembers what was worked out from long strings, such as the
// trees found in a page or its token count, bounded in bytes.
//
// An agent sends every page again in each later request of its conversation,
// and a cache hit sends the same page again whole, so the work a gateway does
// on a page's text is mostly work it has done before.
package memo

import (
	"iter"
	"strings"
	"sync"
)

// EntryOverhead approximates what one entry costs beyond the key and the value's
// own bytes: the map slot and the string and entry headers.
const EntryOverhead = 64

// Memo maps strings to values. It holds about maxBytes, in two generations:
// when the current one is full it becomes the old one and a new one starts, and
// a look-up that finds a key in the old generation moves it to the current one.
// What is in use stays; what was not used for a generation is forgotten, with
// no bookkeeping per entry.
//
// A nil *Memo remembers nothing. A Memo is safe for concurrent use; values are
// shared between callers and must not be modified.
type Memo[V any] struct {
	half int // byte budget of one generation

	mu       sync.Mutex
	cur, old map[string]entry[V]
	curBytes int
}

type entry[V any] struct {
	v    V
	size int
}

// New returns a Memo that holds about maxBytes of keys and values; zero or
// less remembers nothing.
func New[V any](maxBytes int) *Memo[V] {
	if maxBytes <= 0 {
		return nil
	}
	return &Memo[V]{half: maxBytes / 2, cur: map[string]entry[V]{}}
}

// Get returns the value stored for key.
func (m *Memo[V]) Get(key string) (V, bool) {
	if m == nil {
		var zero V
		return zero, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lookup(key)
}

// GetBytes is Get for a key held as bytes, without copying them.
func (m *Memo[V]) GetBytes(key []byte) (V, bool) {
	if m == nil {
		var zero V
		return zero, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.cur[string(key)]; ok {
		return e.v, true
	}
	e, ok := m.old[string(key)]
	if ok {
		delete(m.old, string(key))
		m.put(string(key), e)
	}
	return e.v, ok
}

// GetAll looks up every key of keys under one lock, and calls f with what it
// found for each: counting a page's tokens looks up each of its hundreds of
// lines.
func (m *Memo[V]) GetAll(keys iter.Seq[string], f func(key string, v V, ok bool)) {
	if m == nil {
		var zero V
		for k := range keys {
			f(k, zero, false)
		}
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range keys {
		v, ok := m.lookup(k)
		f(k, v, ok)
	}
}

// Len is the number of entries held.
func (m *Memo[V]) Len() int {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.cur) + len(m.old)
}

// Put stores v for key. size is what v holds beyond the key, in bytes. The
// key is copied: it is usually a slice of a request's text and would keep all
// of it alive.
func (m *Memo[V]) Put(key string, v V, size int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.add(key, true, v, size)
}

// PutBytes is Put for a key held as bytes.
func (m *Memo[V]) PutBytes(key []byte, v V, size int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.add(string(key), false, v, size)
}

// PutAll stores every pair of kvs under one lock, each value holding nothing
// beyond its key.
func (m *Memo[V]) PutAll(kvs iter.Seq2[string, V]) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range kvs {
		m.add(k, true, v, 0)
	}
}

// Update stores what f makes of the value held for key (ok says whether one
// is) in one step, under the memo's lock: callers who each add to one value,
// a list, lose nothing to each other. f returns the new value and what it
// holds beyond the key, as Put's size; a value too large for the memo is not
// kept, and neither is what was held before. f must not call the memo.
func (m *Memo[V]) Update(key []byte, f func(v V, ok bool) (V, int)) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.cur[string(key)]
	if ok {
		delete(m.cur, string(key))
		m.curBytes -= e.size
	} else if e, ok = m.old[string(key)]; ok {
		delete(m.old, string(key))
	}
	v, size := f(e.v, ok)
	m.add(string(key), false, v, size)
}

// add stores v for key unless the current generation has it; clone says
// whether key must be copied to be the memo's own.
func (m *Memo[V]) add(key string, clone bool, v V, size int) {
	if _, ok := m.cur[key]; ok {
		return
	}
	delete(m.old, key)
	e := entry[V]{v: v, size: len(key) + size + EntryOverhead}
	if e.size > m.half {
		return
	}
	if clone {
		key = strings.Clone(key)
	}
	m.put(key, e)
}

func (m *Memo[V]) lookup(key string) (V, bool) {
	if e, ok := m.cur[key]; ok {
		return e.v, true
	}
	e, ok := m.old[key]
	if ok {
		delete(m.old, key)
		m.put(strings.Clone(key), e)
	}
	return e.v, ok
}

// put stores an entry whose key the memo owns.
func (m *Memo[V]) put(key string, e entry[V]) {
	if m.curBytes+e.size > m.half {
		m.old, m.cur, m.curBytes = m.cur, make(map[string]entry[V], len(m.cur)), 0
	}
	m.cur[key] = e
	m.curBytes += e.size
}
