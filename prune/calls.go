package prune

import (
	"context"
	"errors"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// Calls bounds the retriever calls of one request: a body that holds a
// thousand pages must not make a thousand paid calls. A nil *Calls bounds
// nothing. It is safe for concurrent use.
type Calls struct {
	left atomic.Int64
}

// NewCalls returns a bound of n calls; n <= 0 bounds nothing (nil).
func NewCalls(n int) *Calls {
	if n <= 0 {
		return nil
	}
	c := &Calls{}
	c.left.Store(int64(n))
	return c
}

// take reserves one call; false when none is left.
func (c *Calls) take() bool {
	if c == nil {
		return true
	}
	if c.left.Add(-1) >= 0 {
		return true
	}
	c.left.Add(1)
	return false
}

// giveBack returns a call reserved but not made (the selection was stored
// after all).
func (c *Calls) giveBack() {
	if c != nil {
		c.left.Add(1)
	}
}

// ErrCallLimit says that a request had made as many retriever calls as it
// may (FOCUSGATE_RETRIEVER_MAX_CALLS).
var ErrCallLimit = errors.New("prune: the request made as many retriever calls as it may")

// Gate bounds the retriever calls in flight across a gateway
// (FOCUSGATE_RETRIEVER_CONCURRENCY): a call waits for a place, within its
// request's deadline. Every pruner of a gateway shares one. A nil *Gate
// bounds nothing.
type Gate struct {
	sem      *semaphore.Weighted
	inFlight atomic.Int64
}

// NewGate returns a gate of n places; n <= 0 bounds nothing (nil).
func NewGate(n int) *Gate {
	if n <= 0 {
		return nil
	}
	return &Gate{sem: semaphore.NewWeighted(int64(n))}
}

// enter waits for a place; the caller calls leave once its call is done.
func (g *Gate) enter(ctx context.Context) error {
	if g == nil {
		return nil
	}
	if err := g.sem.Acquire(ctx, 1); err != nil {
		return err
	}
	g.inFlight.Add(1)
	return nil
}

func (g *Gate) leave() {
	if g != nil {
		g.inFlight.Add(-1)
		g.sem.Release(1)
	}
}

// InFlight is how many retriever calls hold a place now.
func (g *Gate) InFlight() int64 {
	if g == nil {
		return 0
	}
	return g.inFlight.Load()
}
