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
	"io"
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
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		writeString(h, p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// writeString hashes s through a pooled buffer: []byte(s) would copy the
// whole of s, and a key covers a page of a hundred kilobytes or more.
func writeString(h io.Writer, s string) {
	buf := hashBuffers.Get().(*[4096]byte)
	defer hashBuffers.Put(buf)
	for len(s) > 0 {
		n := copy(buf[:], s)
		h.Write(buf[:n])
		s = s[n:]
	}
}

var hashBuffers = sync.Pool{New: func() any { return new([4096]byte) }}
