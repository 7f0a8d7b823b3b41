package ui

import (
	"strings"
	"sync"
	"unsafe"

	"github.com/focusgate/focusgate"
)

// entry is one request as the ring keeps it: the record, stripped of what
// it may not keep, with its own copies of what it does.
type entry struct {
	ID  uint64
	rec Record
	obs []storedObs
	// textDropped is set when the page text was captured but did not fit
	// in the ring's byte bound on its own.
	textDropped bool
	size        int64
}

// storedObs is an Observation as kept: numbers always, text only with
// capture, lines as compact spans into Original.
type storedObs struct {
	Observation
	lineCount   int
	focusedLine int // 1-based; 0 when no line holds the focus
	spans       []span
}

type span struct{ start, end int32 }

// Fixed costs of an entry, for the byte bound: the structs themselves plus
// slice and map headers, rounded up for allocator overhead.
var (
	entryOverhead = int64(unsafe.Sizeof(entry{})) + 64
	obsOverhead   = int64(unsafe.Sizeof(storedObs{})) + 32
	rangeSize     = int64(unsafe.Sizeof(focusgate.Range{}))
	spanSize      = int64(unsafe.Sizeof(span{}))
)

// newEntry builds what the ring keeps of r. It runs outside the ring's
// lock: copying page text is the only work Record does that grows with the
// page.
func newEntry(r Record, capture bool) *entry {
	e := &entry{rec: r}
	e.rec.Observations = nil
	e.rec.Model, e.rec.Key = strings.Clone(r.Model), strings.Clone(r.Key)
	e.obs = make([]storedObs, len(r.Observations))
	// The line numbers of every page share two arrays: a tool loop's
	// request re-applies a selection to each of its dozens of pages.
	nr, nf := 0, 0
	for _, o := range r.Observations {
		nr, nf = nr+len(o.Ranges)+len(o.Kept), nf+len(o.Flagged)
	}
	ranges, flagged := make([]focusgate.Range, 0, nr), make([]int, 0, nf)
	for i, o := range r.Observations {
		s := storedObs{lineCount: len(o.Lines)}
		if o.FocusedBID != "" {
			for j := range o.Lines {
				if o.Lines[j].BID == o.FocusedBID {
					s.focusedLine = j + 1
					break
				}
			}
		}
		s.Format, s.Status, s.Reason = o.Format, o.Status, o.Reason
		s.TokensBefore, s.TokensAfter, s.Cache, s.Retriever = o.TokensBefore, o.TokensAfter, o.Cache, o.Retriever
		s.Ranges, ranges = carve(ranges, o.Ranges)
		s.Kept, ranges = carve(ranges, o.Kept)
		s.Flagged, flagged = carve(flagged, o.Flagged)
		if capture {
			s.Goal, s.History, s.Reasoning = strings.Clone(o.Goal), strings.Clone(o.History), strings.Clone(o.Reasoning)
			s.Original, s.Forwarded = strings.Clone(o.Original), strings.Clone(o.Forwarded)
			s.spans = make([]span, 0, len(o.Lines))
			for _, l := range o.Lines {
				if l.Start < 0 || l.End < l.Start || l.End > len(o.Original) {
					s.spans = nil // not lines of this text: show it without numbers
					break
				}
				s.spans = append(s.spans, span{int32(l.Start), int32(l.End)})
			}
		}
		e.obs[i] = s
	}
	e.size = e.measure()
	return e
}

// carve copies src to the end of dst, whose room must hold it, and returns
// the copy, with no room beyond it, and dst grown by it. An empty src gives
// nil, as slices.Clone does.
func carve[T any](dst, src []T) (copied, grown []T) {
	if len(src) == 0 {
		return nil, dst
	}
	n := len(dst)
	dst = append(dst, src...)
	return dst[n:len(dst):len(dst)], dst
}

// measure estimates the entry's memory: structs, slices and string bytes,
// each allocation counted with the allocator's worst rounding (size classes
// are at most 12.5% apart), so that the ring's real heap stays within its
// bound.
func (e *entry) measure() int64 {
	n := alloc(entryOverhead) + alloc(int64(len(e.rec.Model))) + alloc(int64(len(e.rec.Key)))
	for _, o := range e.obs {
		n += obsOverhead
		n += alloc(rangeSize*int64(cap(o.Ranges))) + alloc(rangeSize*int64(cap(o.Kept)))
		n += alloc(8 * int64(cap(o.Flagged)))
		n += alloc(spanSize * int64(cap(o.spans)))
		for _, s := range []string{o.Goal, o.History, o.Reasoning, o.Original, o.Forwarded} {
			n += alloc(int64(len(s)))
		}
	}
	return n
}

func alloc(n int64) int64 {
	if n == 0 {
		return 0
	}
	return n + n/8 + 16
}

// dropText forgets the entry's page text.
func (e *entry) dropText() {
	for i := range e.obs {
		o := &e.obs[i]
		if o.Original != "" || o.Goal != "" || o.History != "" || o.Reasoning != "" || o.Forwarded != "" {
			e.textDropped = true
		}
		o.Goal, o.History, o.Reasoning, o.Original, o.Forwarded, o.spans = "", "", "", "", "", nil
	}
	e.size = e.measure()
}

// ring holds the most recent entries within a count and a byte bound,
// evicting the oldest first. Entries get consecutive ids, so that one is
// found by arithmetic.
type ring struct {
	mu       sync.RWMutex
	buf      []*entry // circular; grows up to maxCount, so a large bound costs nothing until used
	head     int      // index of the oldest entry
	n        int
	bytes    int64
	nextID   uint64
	maxCount int
	maxBytes int64
}

func newRing(maxCount int, maxBytes int64) *ring {
	return &ring{nextID: 1, maxCount: maxCount, maxBytes: maxBytes}
}

// add stores e, evicting the oldest entries until both bounds hold. An entry
// larger than the byte bound on its own keeps its numbers, not its text.
func (r *ring) add(e *entry) {
	if e.size > r.maxBytes {
		e.dropText()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e.ID = r.nextID
	r.nextID++
	if r.n == len(r.buf) && len(r.buf) < r.maxCount {
		r.grow()
	}
	for r.n > 0 && (r.n == len(r.buf) || r.bytes+e.size > r.maxBytes) {
		r.bytes -= r.buf[r.head].size
		r.buf[r.head] = nil
		r.head = (r.head + 1) % len(r.buf)
		r.n--
	}
	r.buf[(r.head+r.n)%len(r.buf)] = e
	r.n++
	r.bytes += e.size
}

// grow doubles the buffer, up to maxCount, oldest entry first.
func (r *ring) grow() {
	buf := make([]*entry, min(max(2*len(r.buf), 16), r.maxCount))
	for i := range r.n {
		buf[i] = r.buf[(r.head+i)%len(r.buf)]
	}
	r.buf, r.head = buf, 0
}

// get returns the entry with id, if it is still held.
func (r *ring) get(id uint64) (*entry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.n == 0 {
		return nil, false
	}
	first := r.buf[r.head].ID
	if id < first || id >= first+uint64(r.n) {
		return nil, false
	}
	return r.buf[(r.head+int(id-first))%len(r.buf)], true
}

// newest calls fn on entries from the newest to the oldest until it
// returns false.
func (r *ring) newest(fn func(*entry) bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for i := r.n - 1; i >= 0; i-- {
		if !fn(r.buf[(r.head+i)%len(r.buf)]) {
			return
		}
	}
}

// usage reports how many entries the ring holds and their estimated bytes.
func (r *ring) usage() (int, int64) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.n, r.bytes
}
