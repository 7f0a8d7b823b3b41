//go:build !linux

package cache

import (
	"syscall"
	"time"
)

// waiting cannot look at a socket on this system: a read whose deadline
// passed while its answer waited fails, and counts as a slow round trip.
func waiting(syscall.RawConn) bool { return false }

// kernelRoundTrip cannot ask the kernel on this system: round trips are
// timed by their reader, stalls of the gateway included.
func kernelRoundTrip(syscall.RawConn) (time.Duration, bool) { return 0, false }
