// Package redisconn opens the go-redis clients of the cache and the holdout,
// which keep Redis off a request's path in the same way: every call bounded,
// never retried, and a failure reported at once so that the caller can fall
// back to working on its own.
package redisconn

import (
	"context"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Dial makes a connection to one Redis server.
type Dial = func(ctx context.Context, network, addr string) (net.Conn, error)

// Open returns a client for url, a single server or, when cluster is set, a
// cluster's seed nodes as go-redis's ParseClusterURL reads them. Each dial,
// socket read and write and wait for a pooled connection is bounded by
// timeout, overriding any timeout the URL gives. If wrap is not nil, the
// client dials through wrap(d), d being the dialer go-redis would have used.
func Open(url string, cluster bool, timeout time.Duration, wrap func(d Dial) Dial) (redis.UniversalClient, error) {
	if wrap == nil {
		wrap = func(d Dial) Dial { return d }
	}
	// Maintenance notifications would relax the timeouts during a server
	// upgrade, which is exactly when Redis must stay off the path.
	maint := &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	if !cluster {
		o, err := redis.ParseURL(url)
		if err != nil {
			return nil, err
		}
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = timeout, timeout, timeout, timeout
		o.MaxRetries, o.DialerRetries = -1, 1
		o.MaintNotificationsConfig = maint
		o.Dialer = wrap(redis.NewDialer(o))
		return redis.NewClient(o), nil
	}
	o, err := redis.ParseClusterURL(url)
	if err != nil {
		return nil, err
	}
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = timeout, timeout, timeout, timeout
	o.MaxRetries, o.DialerRetries = -1, 1
	// A MOVED or ASK during a resharding or failover is followed once, within
	// the same call's timeout; a storm of them fails the call, which counts
	// as Redis being down like any failure.
	o.MaxRedirects = 1
	o.MaintNotificationsConfig = maint
	// What the cluster client gives each node when it has no dialer.
	o.Dialer = wrap(redis.NewDialer(&redis.Options{DialTimeout: o.DialTimeout, TLSConfig: o.TLSConfig}))
	return redis.NewClusterClient(o), nil
}
