package main

import (
	"errors"
	"syscall"
	"time"
)

// threadSleep blocks the calling thread for d with nanosleep, whose timer is
// the kernel's own: it wakes within tens of microseconds, where time.Sleep in
// an idle process can wake a millisecond late. The runtime hands the thread's
// other goroutines to another thread meanwhile.
func threadSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var left syscall.Timespec
		if err := syscall.Nanosleep(&ts, &left); !errors.Is(err, syscall.EINTR) {
			return
		}
		ts = left
	}
}
