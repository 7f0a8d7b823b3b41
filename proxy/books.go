package proxy

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/focusgate/focusgate/internal/later"
)

const (
	// booksDelay is how long a request's bookkeeping may wait to run with
	// others': long enough that a client sending requests back to back
	// finds its next request read at once, short enough that /metrics and
	// the dashboard, which flush it before they read, never wait long.
	booksDelay = 50 * time.Millisecond
	// booksMax bounds the requests whose bookkeeping waits, and the memory
	// it holds should a log sink stall: the request that finds the queue
	// full does the work of all of them.
	booksMax = 1024
)

// newBooks returns the queue of the work done for each request after its
// answer: the outcome's log line, its metrics and dashboard entry, and the
// access log line.
func (s *Server) newBooks() *later.Queue {
	return later.New(booksDelay, booksMax, func(v any) {
		s.log.LogAttrs(context.Background(), slog.LevelError, "bookkeeping panicked", slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
	})
}

// Flush does the bookkeeping of every request answered so far: its log
// lines, metrics and dashboard entry. /metrics and the dashboard flush
// before they read, and Run before it returns.
func (s *Server) Flush() {
	s.books.Flush()
}
