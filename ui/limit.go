package ui

import (
	"net"
	"sync"
	"time"
)

// Sign-in attempts: a remote address gets loginAttempts wrong admin keys per
// loginWindow, then 429 until the window it opened ends. The table of
// addresses is bounded: once full, a new address shares one entry with every
// other newcomer, so that an attacker spreading over many addresses slows
// down the others rather than the gateway's memory growing.
const (
	loginAttempts  = 5
	loginWindow    = 15 * time.Minute
	maxLoginTracks = 4096
)

// loginLimiter counts failed sign-ins per remote address. It is safe for
// concurrent use.
type loginLimiter struct {
	mu    sync.Mutex
	seen  map[string]*attempts
	crowd attempts // shared by the addresses that found the table full
}

type attempts struct {
	failures int
	since    time.Time // start of the window
}

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{seen: map[string]*attempts{}}
}

// allow says whether the address may try a key now, or how long it must wait.
func (l *loginLimiter) allow(remote string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.entry(remote, now, false)
	if a == nil || now.Sub(a.since) >= loginWindow || a.failures < loginAttempts {
		return true, 0
	}
	return false, a.since.Add(loginWindow).Sub(now)
}

// fail counts a wrong key from the address.
func (l *loginLimiter) fail(remote string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.entry(remote, now, true)
	if now.Sub(a.since) >= loginWindow {
		*a = attempts{since: now}
	}
	a.failures++
}

// entry is the address's attempts; with create, one is made, forgetting
// windows that are over when the table is full.
func (l *loginLimiter) entry(remote string, now time.Time, create bool) *attempts {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	if a, ok := l.seen[host]; ok {
		return a
	}
	if !create {
		if len(l.seen) >= maxLoginTracks {
			return &l.crowd
		}
		return nil
	}
	if len(l.seen) >= maxLoginTracks {
		for h, a := range l.seen {
			if now.Sub(a.since) >= loginWindow {
				delete(l.seen, h)
			}
		}
	}
	if len(l.seen) >= maxLoginTracks {
		return &l.crowd
	}
	a := &attempts{since: now}
	l.seen[host] = a
	return a
}
