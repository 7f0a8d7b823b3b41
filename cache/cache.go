// Package cache stores retriever selections so that the same page, goal and
// prompt never pay for the retriever twice: in process by default, or in Redis
// when several gateway replicas serve one team. It also makes identical
// in-flight computations run once, per process and across replicas.
//
// The package knows nothing about what it stores: values are opaque bytes and
// keys are built by the caller with Key.
package cache

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"sync"
)

// ErrNotFound is returned by Store.Get for a key the store does not hold.
var ErrNotFound = errors.New("cache: not found")

// Store holds values by key; Memory and Redis implement it. It must be safe
// for concurrent use. Slices returned by Get may be shared with other callers
// and must not be modified.
type Store interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Set(ctx context.Context, key string, val []byte) error
}

// deleter is implemented by stores that can forget a value, so that one that
// turns out to be unusable is computed again rather than served until it
// expires.
type deleter interface {
	Delete(ctx context.Context, key string) error
}

// Key hashes its parts into a fixed-length key. Every part is length-prefixed,
// so ("ab", "c") and ("a", "bc") give different keys. Callers put a format
// version first, so that a change in what a value means never reads old
// entries. Secrets must never be passed: the key is stored in clear in Redis.
func Key(parts ...string) string {
	buf := hashBuffers.Get().(*[4096]byte)
	defer hashBuffers.Put(buf)
	// The parts are copied into buf, not written one by one: most are
	// short (a model's name, a hash), and a page is written a buffer at a
	// time; []byte(part) would copy the whole of it. Parts that fit the
	// buffer, as a cache key's do, are hashed at once without a digest on
	// the heap: a tool loop's request builds a key for each of its pages.
	var h hash.Hash
	write := func(b []byte) []byte {
		if h == nil {
			h = sha256.New()
		}
		h.Write(b)
		return b[:0]
	}
	b := buf[:0]
	for _, p := range parts {
		if cap(b)-len(b) < 8 {
			b = write(b)
		}
		b = binary.BigEndian.AppendUint64(b, uint64(len(p)))
		for len(p) > 0 {
			if len(b) == cap(b) {
				b = write(b)
			}
			n := copy(b[len(b):cap(b)], p)
			b, p = b[:len(b)+n], p[n:]
		}
	}
	var sum [sha256.Size]byte
	if h == nil {
		sum = sha256.Sum256(b)
	} else {
		h.Write(b)
		h.Sum(sum[:0])
	}
	var key [2 * sha256.Size]byte
	hex.Encode(key[:], sum[:])
	return string(key[:])
}

var hashBuffers = sync.Pool{New: func() any { return new([4096]byte) }}
