package detect

import (
	"slices"
	"unsafe"
)

// What detection holds beyond the body is charged to Options.Reserve as it
// grows, so that a caller bounding the memory of inspection bounds this too:
// a 28 MB body of a million one-word text parts is indexed by a million
// segments, several times the body's size.
const (
	segmentSize  = int64(unsafe.Sizeof(segment{}))
	segStateSize = int64(unsafe.Sizeof(segState{}))
	unitSize     = int64(unsafe.Sizeof(unit{}))
	callSize     = int64(unsafe.Sizeof(call{}))
	answerSize   = int64(unsafe.Sizeof(nearestAnswer{}))
	turnSize     = int64(unsafe.Sizeof(turn{}))
)

// note records n bytes the conversation has come to hold, charged at the
// next account.
func (c *conversation) note(n int64) {
	c.pending += n
}

// account charges the reserve with what the conversation has come to hold
// since the last call: what note recorded, and each larger array the
// segment and unit lists grew into (the arrays they left behind count too:
// they are held until the collector takes them). Once the reserve refuses,
// every later call fails too and detection stops.
func (c *conversation) account() error {
	if c.over {
		return ErrOverBudget
	}
	if c.reserve == nil {
		return nil
	}
	if n := cap(c.segs); n != c.segsCap {
		c.pending += int64(n) * segmentSize
		c.segsCap = n
	}
	if n := cap(c.units); n != c.unitsCap {
		c.pending += int64(n) * unitSize
		c.unitsCap = n
	}
	if c.pending == 0 {
		return nil
	}
	n := c.pending
	c.pending = 0
	if !c.reserve(n) {
		c.over = true
		return ErrOverBudget
	}
	return nil
}

// room returns s with room for one more element, doubling a full array.
// Past 256 elements append grows an array by less and less, toward a quarter
// at a time, which leaves behind, before the collector runs, up to four times
// the final array; doubling leaves one.
func room[T any](s []T) []T {
	if len(s) < cap(s) || len(s) < 256 {
		return s
	}
	return slices.Grow(s, len(s))
}
