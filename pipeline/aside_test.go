package pipeline

import (
	"runtime"
	"sync"
	"testing"
)

// waitFor yields until w has n workers waiting. It has no deadline: the
// test's own timeout bounds it on a loaded machine.
func waitFor(w *workers, n int64) {
	for w.waiting.Load() != n {
		runtime.Gosched()
	}
}

func TestAWaitingWorkerTakesTheNextInspection(t *testing.T) {
	w := &workers{jobs: make(chan func()), maxIdle: 1}
	done := make(chan struct{})
	w.run(func() { done <- struct{}{} })
	<-done
	waitFor(w, 1)

	// Had a new goroutine run it, the first would still be waiting.
	waitingDuring := make(chan int64)
	w.run(func() { waitingDuring <- w.waiting.Load() })
	if n := <-waitingDuring; n != 0 {
		t.Fatalf("%d workers waiting while the second inspection ran, want 0: it went to a new goroutine", n)
	}
	waitFor(w, 1)
}

func TestWorkersRunEveryInspectionAndKeepFewWaiting(t *testing.T) {
	w := &workers{jobs: make(chan func()), maxIdle: 2}
	const n = 500
	var wg sync.WaitGroup
	var mu sync.Mutex
	ran := 0
	release := make(chan struct{})
	for range n {
		wg.Add(1)
		go w.run(func() {
			defer wg.Done()
			<-release
			mu.Lock()
			ran++
			mu.Unlock()
		})
	}
	close(release)
	wg.Wait()
	if ran != n {
		t.Fatalf("%d inspections ran, want %d", ran, n)
	}
	waitFor(w, 2)
}
