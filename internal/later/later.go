// Package later runs the bookkeeping of answered requests in batches, off
// the path of the connection that served them.
//
// net/http reads a connection's next request only once the handler of the
// last one has returned, and a client that sends its requests one after
// another sends the next as soon as it has its answer. Whatever a handler
// does after answering (log lines, metrics, the dashboard) therefore
// delays that client's next request. Handing each request's bookkeeping to
// a goroutine of its own does not help: waking one costs about what it
// saves. A Queue holds the work instead, and runs all of it together, on
// one goroutine, a short while after the first piece was queued.
package later

import (
	"sync"
	"time"
)

// Queue holds functions and runs them in the order they were queued, in
// batches: a delay after the first of a batch was queued, at once when a
// maximum are waiting (which bounds the memory a stalled batch can hold),
// or when Flush is called. Batches never run concurrently. It is safe for
// concurrent use.
type Queue struct {
	delay   time.Duration
	max     int
	onPanic func(v any)

	mu      sync.Mutex
	pending []func()
	spare   []func() // the last batch's slice, kept for the next
	armed   bool     // a timer will flush what is pending

	running sync.Mutex // held while a batch runs
}

// New returns a Queue that runs what it is given at most delay after it was
// queued, or when max functions are waiting. A function that panics is
// recovered, handed to onPanic, and the batch goes on.
func New(delay time.Duration, max int, onPanic func(v any)) *Queue {
	return &Queue{delay: delay, max: max, onPanic: onPanic}
}

// Do queues f. It runs f, with everything queued before it, on the
// caller's goroutine when the queue is full.
func (q *Queue) Do(f func()) {
	q.mu.Lock()
	q.pending = append(q.pending, f)
	full := len(q.pending) >= q.max
	arm := !q.armed && !full
	if arm {
		q.armed = true
	}
	q.mu.Unlock()
	switch {
	case full:
		q.Flush()
	case arm:
		time.AfterFunc(q.delay, q.Flush)
	}
}

// Flush runs everything queued before it was called, and returns when that
// has run: a reader of what the functions record (metrics, the dashboard)
// calls it first, and so sees every request answered before it asked.
func (q *Queue) Flush() {
	q.running.Lock()
	defer q.running.Unlock()
	q.mu.Lock()
	batch := q.pending
	q.pending, q.spare = q.spare[:0], nil
	q.armed = false
	q.mu.Unlock()
	for i, f := range batch {
		q.run(f)
		batch[i] = nil
	}
	q.mu.Lock()
	if q.spare == nil {
		q.spare = batch[:0]
	}
	q.mu.Unlock()
}

func (q *Queue) run(f func()) {
	defer func() {
		if v := recover(); v != nil {
			q.onPanic(v)
		}
	}()
	f()
}
