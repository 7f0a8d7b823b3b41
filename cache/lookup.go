package cache

import "context"

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
