package cache

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// waiting reports whether bytes have arrived on socket and wait to be read,
// without reading them; false when socket is nil.
func waiting(socket syscall.RawConn) bool {
	if socket == nil {
		return false
	}
	n := 0
	// Control, unlike Read, runs once the read deadline has passed.
	err := socket.Control(func(fd uintptr) {
		var b [1]byte
		n, _, _ = unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	})
	return err == nil && n > 0
}

// kernelRoundTrip returns the time from the last byte the kernel sent on a
// TCP socket to the last byte it received there, to the kernel's tick (a
// few milliseconds): for a request and its answer, the round trip as the
// network and Redis made it, however late the gateway read the answer.
// False when socket is nil or not TCP, or nothing came since the last send.
func kernelRoundTrip(socket syscall.RawConn) (time.Duration, bool) {
	if socket == nil {
		return 0, false
	}
	var info *unix.TCPInfo
	var ierr error
	if err := socket.Control(func(fd uintptr) {
		info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || ierr != nil {
		return 0, false
	}
	// Both are milliseconds ago, so the earlier event has the larger one.
	if info.Last_data_recv > info.Last_data_sent {
		return 0, false
	}
	return time.Duration(info.Last_data_sent-info.Last_data_recv) * time.Millisecond, true
}
