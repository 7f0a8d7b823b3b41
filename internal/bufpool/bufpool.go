// Package bufpool reuses the large byte buffers a request passes through:
// the body read from the client and the body written back after pruning.
// Allocating them afresh cost a cache hit more than anything but the
// pruning itself: each was allocated, zeroed by the runtime, and collected.
//
// Buffers come in powers of two from 4 KiB to 4 MiB. A larger one is rare
// enough (a long conversation's history) that its allocation does not
// matter, and pooling it would keep megabytes idle between collections; idle
// buffers go back to the runtime within two collections, as sync.Pool's do.
//
// A buffer holds whatever its last user wrote: a caller reads only the bytes
// it has written itself, never past its slice's length.
package bufpool

import (
	"math/bits"
	"sync"
)

const (
	minShift = 12
	maxShift = 22
)

// MaxSize is the largest buffer pooled.
const MaxSize = 1 << maxShift

var pools [maxShift - minShift + 1]sync.Pool // of *[]byte

// class is the pool whose buffers hold n bytes, or -1 for none.
func class(n int) int {
	if n <= 0 || n > MaxSize {
		return -1
	}
	return max(bits.Len(uint(n-1)), minShift) - minShift
}

// Get returns a slice of length n, from a pool when n fits one; its bytes
// are not zeroed.
func Get(n int) []byte {
	c := class(n)
	if c < 0 {
		return make([]byte, n)
	}
	if p, _ := pools[c].Get().(*[]byte); p != nil {
		return (*p)[:n]
	}
	return make([]byte, n, 1<<(c+minShift))
}

// Put gives b back, once nothing reads or writes it any more. A slice that
// Get did not return whole from a pool (its capacity is not a pool's size)
// is left to the collector.
func Put(b []byte) {
	c := class(cap(b))
	if c < 0 || cap(b) != 1<<(c+minShift) {
		return
	}
	b = b[:0]
	pools[c].Put(&b)
}
