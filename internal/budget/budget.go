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

// Tab is one piece of work's share of a budget: taken as the work grows and
// given back in one go when it ends. One goroutine at a time may use it.
type Tab struct {
	b    *Bytes
	held int64
}

// Open starts a tab on the budget.
func (b *Bytes) Open() *Tab {
	return &Tab{b: b}
}

// Acquire takes n more bytes for the tab, or reports false when they do not
// fit.
func (t *Tab) Acquire(n int64) bool {
	if !t.b.Acquire(n) {
		return false
	}
	t.held += n
	return true
}

// Close gives back everything the tab holds.
func (t *Tab) Close() {
	t.b.Release(t.held)
	t.held = 0
}
