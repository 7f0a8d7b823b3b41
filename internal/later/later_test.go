package later_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/focusgate/focusgate/internal/later"
)

// record is what the queued functions did, in order.
type record struct {
	mu  sync.Mutex
	ran []int
}

func (r *record) add(n int) func() {
	return func() {
		r.mu.Lock()
		r.ran = append(r.ran, n)
		r.mu.Unlock()
	}
}

func (r *record) got() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ran)
}

func noPanic(t *testing.T) func(any) {
	return func(v any) { t.Errorf("panic: %v", v) }
}

func TestQueuedWorkRunsAfterTheDelay(t *testing.T) {
	q := later.New(time.Millisecond, 100, noPanic(t))
	done := make(chan struct{})
	q.Do(func() { close(done) })
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("queued work did not run")
	}
}

func TestFlushRunsWhatIsQueuedInOrder(t *testing.T) {
	q := later.New(time.Hour, 100, noPanic(t))
	var r record
	for i := range 3 {
		q.Do(r.add(i))
	}
	if got := r.got(); len(got) != 0 {
		t.Fatalf("ran %v before the delay or a flush", got)
	}
	q.Flush()
	if got := r.got(); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("ran %v; want [0 1 2]", got)
	}
	q.Do(r.add(3))
	q.Flush()
	if got := r.got(); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("after a second batch, ran %v; want [0 1 2 3]", got)
	}
}

func TestAFullQueueRunsOnTheCaller(t *testing.T) {
	q := later.New(time.Hour, 3, noPanic(t))
	var r record
	q.Do(r.add(0))
	q.Do(r.add(1))
	if got := r.got(); len(got) != 0 {
		t.Fatalf("ran %v with room left", got)
	}
	q.Do(r.add(2))
	if got := r.got(); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("the call that filled the queue returned with %v run; want [0 1 2]", got)
	}
}

func TestAPanicIsHandedOnAndTheBatchGoesOn(t *testing.T) {
	var panics []any
	q := later.New(time.Hour, 100, func(v any) { panics = append(panics, v) })
	var r record
	q.Do(func() { panic("boom") })
	q.Do(r.add(1))
	q.Flush()
	if len(panics) != 1 || panics[0] != "boom" {
		t.Errorf("onPanic got %v; want [boom]", panics)
	}
	if got := r.got(); !slices.Equal(got, []int{1}) {
		t.Errorf("after the panic, ran %v; want [1]", got)
	}
}

// A reader that flushes while a batch is running sees that batch's work
// done too, and what was queued later runs after it.
func TestFlushWaitsForTheBatchThatIsRunning(t *testing.T) {
	q := later.New(time.Hour, 100, noPanic(t))
	var r record
	started, release := make(chan struct{}), make(chan struct{})
	q.Do(func() {
		close(started)
		<-release
		r.add(0)()
	})
	go q.Flush()
	<-started
	q.Do(r.add(1))
	flushed := make(chan struct{})
	go func() {
		q.Flush()
		close(flushed)
	}()
	if got := r.got(); len(got) != 0 {
		t.Fatalf("ran %v while the first batch was held", got)
	}
	close(release)
	<-flushed
	if got := r.got(); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("ran %v; want [0 1]", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	q := later.New(time.Microsecond, 16, noPanic(t))
	var mu sync.Mutex
	ran := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				q.Do(func() {
					mu.Lock()
					ran++
					mu.Unlock()
				})
			}
			q.Flush()
		}()
	}
	wg.Wait()
	q.Flush()
	if ran != 8*500 {
		t.Fatalf("ran %d functions; want %d", ran, 8*500)
	}
}
