// Package budget bounds the memory the gateway spends on request bodies at
// once. The proxy charges what it decodes and the pipeline what it
// inspects, against one budget (FOCUSGATE_INSPECT_BUDGET_BYTES), so that
// a burst of large or compressed bodies cannot exhaust memory.
package budget

import "sync/atomic"

// Bytes admits work while the bytes it holds stay within a limit. It never
// waits: work that does not fit is not done, or done another way (a body
// forwarded as it came). It is safe for concurrent use.
type Bytes struct {
	limit int64
	used  atomic.Int64
}

// New returns a budget of limit bytes.
func New(limit int64) *Bytes {
	return &Bytes{limit: limit}
}

// Acquire takes n bytes of the budget, or reports false when they do not
// fit. A nil budget admits everything.
func (b *Bytes) Acquire(n int64) bool {
	if b == nil {
		return true
	}
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		return false
	}
	return true
}

// Release gives back n bytes taken by Acquire.
func (b *Bytes) Release(n int64) {
	if b != nil {
		b.used.Add(-n)
	}
}

// Used is the bytes held now.
func (b *Bytes) Used() int64 { return b.used.Load() }
