// Package testlog is a log sink for tests of servers that log from their own
// goroutines: it is safe for concurrent writes, and a test can wait for a line
// instead of sleeping.
package testlog

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Buffer collects log output. The zero value is not usable; call New.
type Buffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written chan struct{} // signalled, without blocking, after every write
}

// New returns an empty Buffer.
func New() *Buffer { return &Buffer{written: make(chan struct{}, 1)} }

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	n, err := b.buf.Write(p)
	b.mu.Unlock()
	select {
	case b.written <- struct{}{}:
	default:
	}
	return n, err
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// WaitFor returns once the output contains s, and fails the test if it does
// not within a minute.
func (b *Buffer) WaitFor(tb testing.TB, s string) {
	tb.Helper()
	b.WaitUntil(tb, "a line with "+strconv.Quote(s), func(logs string) bool { return strings.Contains(logs, s) })
}

// WaitUntil returns once done holds for the output, and fails the test if it
// does not within a minute.
func (b *Buffer) WaitUntil(tb testing.TB, what string, done func(logs string) bool) {
	tb.Helper()
	deadline := time.After(time.Minute)
	for !done(b.String()) {
		select {
		case <-b.written:
		case <-deadline:
			tb.Fatalf("gave up waiting for %s in the logs:\n%s", what, b.String())
		}
	}
}
