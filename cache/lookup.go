package cache

import (
	"context"
	"errors"
)

// Lookup returns the value stored under key without computing it and
// without waiting for a computation of it in flight: one store Get. It
// serves values that are worth having only when they are already known,
// such as the selection of a page that an earlier request pruned. The error
// is ErrNotFound when the store holds nothing under key, or the store's own
// failure; either way the caller goes on without the value. The returned
// slice is shared with other callers and must not be modified.
func (c *Cache) Lookup(ctx context.Context, key string) ([]byte, error) {
	return c.store.Get(ctx, key)
}

// ErrNotHeld is LookupHeld's answer for a key that this process's memory does
// not hold but the store might: finding out would wait on the network.
var ErrNotHeld = errors.New("cache: not held in this process")

// LookupHeld is Lookup without waiting: it answers from this process's memory
// alone. A Memory store answers as Lookup does; Redis answers from its
// in-process front, or with ErrNotHeld. A caller with many keys to look up
// takes the held ones at once and waits only for the others, side by side.
func (c *Cache) LookupHeld(key string) ([]byte, error) {
	if c.holder == nil {
		return nil, ErrNotHeld
	}
	return c.holder.held(key)
}
