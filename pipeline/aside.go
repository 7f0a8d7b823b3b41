package pipeline

import "sync/atomic"

// workers run inspections aside from the goroutines of their requests (see
// rewriteAside). Detection and pruning grow a goroutine's stack to tens of
// kilobytes, and a new goroutine would grow it again on every request,
// copying its frames at each step: about a tenth of a cache hit's
// instructions. A worker that is done waits for the next inspection
// instead, so that its stack is grown once (until the collector shrinks an
// idle one); when maxIdle are waiting already, it ends.
type workers struct {
	jobs    chan func()
	waiting atomic.Int64
	maxIdle int64
}

// aside is the process's workers: inspections of every pipeline share them,
// so that no pipeline needs closing to end its own.
var aside = &workers{jobs: make(chan func()), maxIdle: 64}

// run runs f on a waiting worker, or on a new one when none is waiting. f
// must not panic.
//
// A caller claims a waiting worker before handing it f: a worker that is
// done counts itself as waiting just before it waits, so a request that
// follows the last one at once still finds it, and each claim is a worker
// that is sure to take the job.
func (w *workers) run(f func()) {
	for {
		n := w.waiting.Load()
		if n == 0 {
			go w.work(f)
			return
		}
		if w.waiting.CompareAndSwap(n, n-1) {
			w.jobs <- f
			return
		}
	}
}

func (w *workers) work(f func()) {
	for {
		f()
		// Nothing of the last inspection is kept while waiting.
		f = nil
		if w.waiting.Load() >= w.maxIdle {
			return
		}
		w.waiting.Add(1)
		f = <-w.jobs
	}
}
