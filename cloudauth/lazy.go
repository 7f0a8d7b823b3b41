package cloudauth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/focusgate/focusgate"
)

// lazy finds a credential on first use and keeps the answer.
//
// The first look runs once, in its own goroutine, bounded by timeout, and
// every caller that arrives meanwhile waits for that one look (or for its
// own context). A credential found is kept for good: the SDKs' caches renew
// it. A negative answer is kept for retry; after that the next caller
// starts a new look in the background and, like every caller while it
// runs, gets the negative answer at once, so that no caller waits after the
// first look.
type lazy[T any] struct {
	resolve func(ctx context.Context) (T, error)
	// report is told each new answer: the first, and a credential found
	// after none was. It logs; it must not block.
	report  func(v T, err error)
	timeout time.Duration
	retry   time.Duration
	now     func() time.Time

	mu       sync.Mutex
	answered bool
	val      T
	err      error         // the negative answer, wrapping ErrNoCredentials
	at       time.Time     // when the answer was found
	flight   chan struct{} // closed when the look under way has answered
	onWait   func()        // test hook: a caller is about to wait for the first look
}

func newLazy[T any](resolve func(context.Context) (T, error), report func(T, error), opts Options) *lazy[T] {
	return &lazy[T]{
		resolve: resolve,
		report:  report,
		timeout: opts.timeout(),
		retry:   opts.retryAfter(),
		now:     time.Now,
	}
}

// get returns the credential, or an error wrapping ErrNoCredentials.
func (l *lazy[T]) get(ctx context.Context) (T, error) {
	var zero T
	l.mu.Lock()
	if l.answered {
		v, err := l.val, l.err
		if err != nil && l.flight == nil && l.now().Sub(l.at) >= l.retry {
			l.start()
		}
		l.mu.Unlock()
		return v, err
	}
	if l.flight == nil {
		l.start()
	}
	flight := l.flight
	if l.onWait != nil {
		l.onWait()
	}
	l.mu.Unlock()

	select {
	case <-flight:
	case <-ctx.Done():
		return zero, fmt.Errorf("%w: still looking: %w", focusgate.ErrNoCredentials, context.Cause(ctx))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.val, l.err
}

// start begins a look. l.mu is held.
func (l *lazy[T]) start() {
	flight := make(chan struct{})
	l.flight = flight
	go l.look(flight)
}

// look runs resolve within the timeout and records its answer. resolve is
// given a context with that deadline; an answer that comes later (from a
// library call that ignores its context) is dropped.
func (l *lazy[T]) look(flight chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	type answer struct {
		v   T
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		v, err := l.resolve(ctx)
		answers <- answer{v, err}
	}()
	var a answer
	select {
	case a = <-answers:
	case <-ctx.Done():
		a.err = fmt.Errorf("none found within %v: %w", l.timeout, ctx.Err())
	}
	if a.err != nil {
		var zero T
		a.v = zero
		if !errors.Is(a.err, focusgate.ErrNoCredentials) {
			a.err = fmt.Errorf("%w: %w", focusgate.ErrNoCredentials, a.err)
		}
	}

	l.mu.Lock()
	changed := !l.answered || (l.err != nil && a.err == nil)
	l.answered, l.val, l.err, l.at = true, a.v, a.err, l.now()
	l.flight = nil
	l.mu.Unlock()
	if changed && l.report != nil {
		l.report(a.v, a.err)
	}
	close(flight)
}

// pending returns the channel of the look under way, or nil: tests wait on
// it instead of sleeping.
func (l *lazy[T]) pending() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.flight
}
