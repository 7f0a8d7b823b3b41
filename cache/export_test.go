package cache

// Internals the external tests look at.

var (
	LockKey     = lockKey
	DoneChannel = doneChannel
)

// Waiting returns how many callers wait for the computation of key.
func (c *Cache) Waiting(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.flights[key]; f != nil {
		return f.waiters
	}
	return 0
}

// MarkUp makes the store believe Redis is up, as a successful probe would.
func (r *Redis) MarkUp() { r.up.Store(true) }

// Store returns the store under c.
func (c *Cache) Store() Store { return c.store }
