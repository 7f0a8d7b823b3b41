package detect

import (
	"encoding/binary"
	"slices"
	"sync/atomic"
	"unsafe"
)

// A unit's shape is what the search for goals and histories learns of it:
// its text with its trees cut out, its sections and where it states a
// focused element. The prompt of a framework that describes its actions at
// length is kilobytes of text around the page, copied and scanned line by
// line for every request; a page sent again is recognised in one
// comparison (see strMemory.at), and the shape of the unit around it is
// recognised with it. A Finder remembers shapes under the strings a unit
// is made of: each string it remembers by the number it gave it, the
// others by their bytes.

// shape is a unit's shape as a Finder remembers it, shared with every
// request that recalls it and never modified.
type shape struct {
	text             string
	bases            []int
	goals, histories []mark
	focus            []span
	focusListed      bool
}

// stringIDs numbers the strings a Finder searched: a shape is remembered
// under the numbers of its unit's strings, not their bytes, and a string
// remembered again, once forgotten, is a new one.
var stringIDs atomic.Uint64

// maxShapeKey bounds the key of a shape: the bytes of its unit's strings
// that the Finder does not remember, a prompt's short parts.
const maxShapeKey = 4096

// shapeKey appends the key of unit ui's shape to dst: the body's API, the
// unit's role, and each of its strings, by number when the Finder
// remembers it and else by its bytes. A unit without a remembered string,
// or with more bytes of others than maxShapeKey, is not remembered: the
// first costs little to scan, the second as much as the key.
func (c *conversation) shapeKey(dst []byte, ui int) ([]byte, bool) {
	u := &c.units[ui]
	if !slices.ContainsFunc(c.segs[u.first:u.end], func(s segment) bool { return s.state != nil && s.state.id != 0 }) {
		return dst, false
	}
	prompt := byte(0)
	if u.prompt {
		prompt = 1
	}
	dst = append(dst, byte(slices.Index(walkers, c.w)), byte(u.role), prompt)
	for si := u.first; si < u.end; si++ {
		if s := c.segs[si].state; s != nil && s.id != 0 {
			dst = binary.LittleEndian.AppendUint64(append(dst, 'n'), s.id)
			continue
		}
		lit := c.segs[si].lit
		if len(dst)+lit.end-lit.start > maxShapeKey {
			return dst, false
		}
		dst = binary.LittleEndian.AppendUint32(append(dst, 'b'), uint32(lit.end-lit.start))
		dst = append(dst, c.body[lit.start:lit.end]...)
	}
	return dst, true
}

// recallShape fills in unit ui's context from the shape the Finder
// remembers of it, if it does. Every string of the unit has been looked at
// (found), so that those the Finder remembers have their numbers.
func (c *conversation) recallShape(ui int, ctx *unitContext) bool {
	if c.shapes == nil {
		return false
	}
	for si := c.units[ui].first; si < c.units[ui].end; si++ {
		c.found(ui, si)
	}
	var buf [1024]byte
	key, ok := c.shapeKey(buf[:0], ui)
	if !ok {
		return false
	}
	sh, ok := c.shapes.GetBytes(key)
	if !ok {
		return false
	}
	ctx.text, ctx.bases = sh.text, sh.bases
	ctx.goals, ctx.histories, ctx.structured = sh.goals, sh.histories, true
	ctx.focus, ctx.focusListed = sh.focus, sh.focusListed
	ctx.recalled = true
	return true
}

// rememberShapes puts the shape of each unit whose goals and histories
// were looked for, and not recalled, in the Finder's memory.
func (c *conversation) rememberShapes() {
	if c.shapes == nil {
		return
	}
	var buf [1024]byte
	for ui := range c.units {
		ctx := c.units[ui].ctx
		if ctx == nil || !ctx.structured || ctx.recalled {
			continue
		}
		key, ok := c.shapeKey(buf[:0], ui)
		if !ok {
			continue
		}
		sh := shape{text: ctx.text, bases: ctx.bases, goals: ctx.goals, histories: ctx.histories,
			focus: ctx.focus, focusListed: ctx.focusListed}
		const markSize, spanSize = int(unsafe.Sizeof(mark{})), int(unsafe.Sizeof(span{}))
		size := len(sh.text) + 8*len(sh.bases) + markSize*(len(sh.goals)+len(sh.histories)) + spanSize*len(sh.focus)
		c.shapes.PutBytes(key, sh, size)
	}
}
