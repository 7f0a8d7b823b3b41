package cloudauth

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
)

// clock is a settable clock for the negative cache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// wait waits for the look under way, if any, to answer.
func wait[T any](l *lazy[T]) {
	if ch := l.pending(); ch != nil {
		<-ch
	}
}

func TestLazyNegativeAnswerIsKept(t *testing.T) {
	var looks atomic.Int32
	found := errors.New("nothing here")
	l := newLazy(func(context.Context) (string, error) {
		if looks.Add(1) < 3 {
			return "", found
		}
		return "cred", nil
	}, nil, Options{RetryAfter: time.Minute})
	clk := newClock()
	l.now = clk.Now
	ctx := context.Background()

	_, err := l.get(ctx)
	if !errors.Is(err, focusgate.ErrNoCredentials) || !errors.Is(err, found) {
		t.Fatalf("first look: %v, want ErrNoCredentials wrapping the cause", err)
	}
	for range 5 {
		if _, err := l.get(ctx); err == nil {
			t.Fatal("the negative answer was not kept")
		}
	}
	if n := looks.Load(); n != 1 {
		t.Fatalf("%d looks within the retry period, want 1", n)
	}

	// Past the period, the next caller starts a look in the background and
	// gets the kept answer without waiting for it.
	clk.Advance(time.Minute)
	if _, err := l.get(ctx); err == nil {
		t.Fatal("the caller that starts a new look waited for it")
	}
	wait(l)
	if n := looks.Load(); n != 2 {
		t.Fatalf("%d looks after the retry period, want 2", n)
	}
	if _, err := l.get(ctx); err == nil {
		t.Fatal("the second negative answer was not kept")
	}

	clk.Advance(time.Minute)
	l.get(ctx)
	wait(l)
	v, err := l.get(ctx)
	if err != nil || v != "cred" {
		t.Fatalf("after a look that found one: %q, %v", v, err)
	}
	clk.Advance(time.Hour)
	l.get(ctx)
	if n := looks.Load(); n != 3 {
		t.Fatalf("%d looks, want 3: a credential found is kept", n)
	}
}

func TestLazyConcurrentCallersShareOneLook(t *testing.T) {
	const callers = 8
	var looks atomic.Int32
	release := make(chan struct{})
	l := newLazy(func(context.Context) (string, error) {
		looks.Add(1)
		<-release
		return "cred", nil
	}, nil, Options{})
	waiting := make(chan struct{}, callers)
	l.onWait = func() { waiting <- struct{}{} }

	var wg sync.WaitGroup
	results := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			_, err := l.get(context.Background())
			results <- err
		})
	}
	for range callers {
		<-waiting // every caller waits on the same look
	}
	close(release)
	wg.Wait()
	close(results)
	for err := range results {
		if err != nil {
			t.Error(err)
		}
	}
	if n := looks.Load(); n != 1 {
		t.Errorf("%d looks for %d concurrent callers, want 1", n, callers)
	}
}

func TestLazyLookIsBounded(t *testing.T) {
	// A look that ignores its context (a metadata probe that never
	// answers) still ends the callers' wait at the timeout.
	stuck := make(chan struct{})
	defer close(stuck)
	l := newLazy(func(context.Context) (string, error) {
		<-stuck
		return "late", nil
	}, nil, Options{Timeout: time.Millisecond})
	_, err := l.get(context.Background())
	if !errors.Is(err, focusgate.ErrNoCredentials) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a stuck look: %v, want ErrNoCredentials and DeadlineExceeded", err)
	}
}

func TestLazyCallerContext(t *testing.T) {
	release := make(chan struct{})
	l := newLazy(func(context.Context) (string, error) {
		<-release
		return "cred", nil
	}, nil, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.get(ctx); !errors.Is(err, context.Canceled) || !errors.Is(err, focusgate.ErrNoCredentials) {
		t.Fatalf("a caller that gives up: %v", err)
	}
	// The look goes on for the callers after it.
	close(release)
	if v, err := l.get(context.Background()); err != nil || v != "cred" {
		t.Fatalf("after the look: %q, %v", v, err)
	}
}

func TestLazyReportsEachNewAnswerOnce(t *testing.T) {
	var mu sync.Mutex
	var reports []string
	var looks atomic.Int32
	l := newLazy(func(context.Context) (string, error) {
		if looks.Add(1) < 3 {
			return "", errors.New("none")
		}
		return "cred", nil
	}, func(v string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			reports = append(reports, "none")
		} else {
			reports = append(reports, "found")
		}
	}, Options{})
	clk := newClock()
	l.now = clk.Now
	for range 3 {
		l.get(context.Background())
		wait(l)
		clk.Advance(DefaultRetryAfter)
	}
	l.get(context.Background())
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(reports, ","); got != "none,found" {
		t.Errorf("reports %s, want none,found", got)
	}
}

func TestCappedBody(t *testing.T) {
	b := capBody(io.NopCloser(strings.NewReader("0123456789")), 10)
	if data, err := io.ReadAll(b); err != nil || string(data) != "0123456789" {
		t.Errorf("at the cap: %q, %v", data, err)
	}
	b = capBody(io.NopCloser(strings.NewReader("0123456789A")), 10)
	data, err := io.ReadAll(b)
	if !errors.Is(err, ErrTooLarge) || len(data) != 10 {
		t.Errorf("over the cap: %d bytes, %v", len(data), err)
	}
}
