package cache

import (
	"context"
	"errors"
	"net"
	"sync"

	"github.com/redis/go-redis/v9"
)

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

// MarkDown makes the store believe Redis is down, as a failed call would,
// without touching Redis.
func (r *Redis) MarkDown() {
	r.mu.Lock()
	r.lastErr = errors.New("marked down by the test")
	r.mu.Unlock()
	r.up.Store(false)
}

// Client returns the go-redis client under the store, so that a test can
// hold its connections busy.
func (r *Redis) Client() redis.UniversalClient { return r.client }

// Store returns the store under c.
func (c *Cache) Store() Store { return c.store }

// AfterFirstGet returns r as a Store whose first Get, once answered by Redis,
// calls between before returning: what between does to Redis lands between
// that look and the Redis calls that follow it, as another replica's work can.
func AfterFirstGet(r *Redis, between func()) Store {
	return &afterFirstGet{Redis: r, between: between}
}

type afterFirstGet struct {
	*Redis  // and so its claim: the cache coordinates through the wrapper
	between func()
	once    sync.Once
}

func (s *afterFirstGet) Get(ctx context.Context, key string) ([]byte, error) {
	val, err := s.Redis.Get(ctx, key)
	s.once.Do(s.between)
	return val, err
}

// WrapConns makes the store built from o wrap each new connection in wrap,
// beneath the timing of its round trips.
func WrapConns(o *RedisOptions, wrap func(net.Conn) net.Conn) { o.wrapConn = wrap }
