// Package logbuf batches a process's log lines into fewer writes.
//
// The gateway logs a line or two for every request it serves. Writing each
// at once costs a system call while the request's connection waits: net/http
// reads a connection's next request only once the handler of the last one
// has returned, and the log lines are written after the answer went out. A
// Writer holds lines for a moment and writes them together, as Envoy and
// nginx can for their access logs. Lines that say something went wrong
// (warnings and errors) go out at once, with every line held before them,
// so that nothing that explains a crash waits in memory.
package logbuf

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Writer is an io.Writer that holds what is written and passes it on to out
// in one write: Delay after the first line it holds, once it holds Size
// bytes, or when Flush is called. A Writer is safe for concurrent use; its
// writes to out are never concurrent.
type Writer struct {
	out   io.Writer
	delay time.Duration
	size  int

	mu    sync.Mutex
	buf   []byte
	timer *time.Timer // armed while buf holds lines
	err   error       // the last write's, reported by Flush
}

// Size is how much a Writer holds before it writes: the lines of a few
// hundred requests.
const Size = 64 << 10

// Delay is how long a line may wait: well under what a person following the
// log notices.
const Delay = 100 * time.Millisecond

// New returns a Writer that writes to out at most Delay after a line comes.
func New(out io.Writer) *Writer {
	w := &Writer{out: out, delay: Delay, size: Size, buf: make([]byte, 0, Size)}
	w.timer = time.AfterFunc(time.Hour, func() { _ = w.Flush() })
	w.timer.Stop()
	return w
}

// Write holds p, writing what is held first when p would not fit. It never
// fails: a failed write of out is reported by the next Flush, as a log line
// cannot be logged.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf)+len(p) > w.size {
		w.flushLocked()
		if len(p) >= w.size {
			w.write(p)
			return len(p), nil
		}
	}
	if len(w.buf) == 0 {
		w.timer.Reset(w.delay)
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// Flush writes what is held and returns the error of the last write to out
// since the last Flush, if any.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	err := w.err
	w.err = nil
	return err
}

func (w *Writer) flushLocked() {
	if len(w.buf) == 0 {
		return
	}
	w.timer.Stop()
	w.write(w.buf)
	w.buf = w.buf[:0]
}

func (w *Writer) write(p []byte) {
	if _, err := w.out.Write(p); err != nil {
		w.err = err
	}
}

// Handler is a slog.Handler that flushes its Writer after each record at
// Urgent level or above, so that a warning or an error is written when it is
// logged, with every line before it.
type Handler struct {
	next slog.Handler
	w    *Writer
}

// Urgent is the lowest level Handler flushes at.
const Urgent = slog.LevelWarn

// NewHandler wraps next, which writes to w.
func NewHandler(next slog.Handler, w *Writer) *Handler {
	return &Handler{next: next, w: w}
}

func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h *Handler) Handle(ctx context.Context, rec slog.Record) error {
	err := h.next.Handle(ctx, rec)
	if rec.Level >= Urgent {
		if ferr := h.w.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{next: h.next.WithAttrs(attrs), w: h.w}
}

func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), w: h.w}
}

var (
	_ io.Writer    = (*Writer)(nil)
	_ slog.Handler = (*Handler)(nil)
)
