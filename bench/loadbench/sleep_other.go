//go:build !linux

package main

import "time"

// threadSleep is time.Sleep where nanosleep is not at hand: a path's pace is
// then kept to within about a millisecond.
func threadSleep(d time.Duration) { time.Sleep(d) }
