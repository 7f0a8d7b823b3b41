package prune

import (
	"context"
	"errors"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// ErrCallLimit says that a page could not be given a retriever call: its
// request had made as many as it may (FOCUSGATE_RETRIEVER_MAX_CALLS).
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
