package cache_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/cache/cachetest"
	"github.com/focusgate/focusgate/internal/redistest"
)

func clusterStore(t *testing.T, c *redistest.Cluster, configure ...func(*cache.RedisOptions)) *cache.Redis {
	t.Helper()
	return cachetest.NewStore(t, c.URL(), append([]func(*cache.RedisOptions){func(o *cache.RedisOptions) { o.Cluster = true }}, configure...)...)
}

// On a real three-master Redis Cluster, two replicas share what either
// stored, byte for byte, and twenty identical concurrent computations across
// them run once: the lock script reads a value and takes a lock that a hash
// tag keeps in one slot.
func TestRedisClusterSharesSelections(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	a := cache.New(clusterStore(t, cl), nil)
	b := cache.New(clusterStore(t, cl, wakeOnlyByNotification), nil)

	// Keys spread over every master's slots.
	for i := range 12 {
		key := fmt.Sprintf("%s-%d", testKey(t), i)
		want := []byte(fmt.Sprintf(`{"ranges":[[1,%d]]}`, i))
		if _, out, err := a.Fetch(t.Context(), key, func(context.Context) ([]byte, error) { return want, nil }); err != nil || out != focusgate.CacheMiss {
			t.Fatalf("replica a: %q, %v", out, err)
		}
		got, out, err := b.Fetch(t.Context(), key, func(context.Context) ([]byte, error) {
			return nil, errors.New("replica b computed a stored value")
		})
		if err != nil || out != focusgate.CacheHit || string(got) != string(want) {
			t.Fatalf("replica b: %q, %q, %v; want a hit with a's bytes", got, out, err)
		}
	}

	const callers = 20
	key := testKey(t)
	var calls atomic.Int32
	release := make(chan struct{})
	compute := func(context.Context) ([]byte, error) {
		calls.Add(1)
		<-release
		return []byte("selection"), nil
	}
	var results []<-chan result
	for i := range callers {
		replica := a
		if i%2 == 1 {
			replica = b
		}
		results = append(results, goFetch(t.Context(), replica, key, compute))
	}
	waitFor(t, "one replica to compute while the others wait", func() bool {
		return calls.Load() == 1 && a.Waiting(key)+b.Waiting(key) == callers
	})
	close(release)
	for _, ch := range results {
		if r := receive(t, ch); r.err != nil || string(r.val) != "selection" {
			t.Fatalf("Fetch = %q, %v", r.val, r.err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("compute ran %d times across replicas, want 1", n)
	}
}

// A master that dies takes its slots down; no request fails for it: each
// gets its value, uncached, and the store reports the cluster's state.
func TestRedisClusterMasterDeathFailsNoRequest(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	r := clusterStore(t, cl)
	c := cache.New(r, nil)
	compute := func(context.Context) ([]byte, error) { return []byte("selection"), nil }
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	killed := make(chan struct{})
	for w := range 4 {
		wg.Go(func() {
			for i := range 40 {
				if w == 0 && i == 10 {
					cl.Masters[1].Stop()
					close(killed)
				}
				key := fmt.Sprintf("%s-%d-%d", testKey(t), w, i)
				val, _, err := c.Fetch(t.Context(), key, compute)
				if err != nil || string(val) != "selection" {
					errs <- fmt.Errorf("Fetch(%s) = %q, %v", key, val, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	<-killed
	for err := range errs {
		t.Error(err)
	}
	if s := r.Stats(); s.Errors["get"]+s.Errors["set"]+s.Errors["lock"] == 0 && s.Skipped == 0 {
		t.Errorf("the store never noticed the dead master: %+v", s)
	}
}

// keyOn returns a key whose selection lives on the master m of cl.
func keyOn(t *testing.T, cl *redistest.Cluster, m *redistest.Server) string {
	t.Helper()
	nodes := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{hostPort(t, cl.URL())}})
	t.Cleanup(func() { nodes.Close() })
	for range 1000 {
		key := testKey(t)
		node, err := nodes.MasterForKey(t.Context(), "focusgate:sel:{"+key+"}")
		if err != nil {
			t.Fatal(err)
		}
		if node.Options().Addr == hostPort(t, m.URL()) {
			return key
		}
	}
	t.Fatal("no key on the master in 1000 tries")
	return ""
}

// While a master without a replica is dead, the cluster stays marked down:
// the probe asks the node that failed, not any node, so that caching does
// not come back only to fail on the dead node's slots again and again. It
// comes back once that node answers again.
func TestRedisClusterHealthDoesNotFlapWhileAMasterIsDead(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	r := clusterStore(t, cl)
	key := keyOn(t, cl, cl.Masters[1])
	cl.Masters[1].Stop()

	if _, err := r.Get(t.Context(), key); err == nil || errors.Is(err, cache.ErrNotFound) {
		t.Fatalf("Get on the dead master's slots = %v, want a failure", err)
	}
	// The probe runs every 10 ms: twenty failed probes in a row, and never
	// a moment up in between.
	waitFor(t, "twenty probes, or the cluster marked up", func() bool {
		s := r.Stats()
		return s.Up || s.Errors["ping"] >= 20
	})
	if s := r.Stats(); s.Up {
		t.Fatalf("the cluster was marked up while a master with slots was dead: %+v", s)
	}

	cl.Masters[1].Restart()
	waitFor(t, "the probe to see the master back", func() bool { return r.Status() == nil })
	if _, err := r.Get(t.Context(), key); !errors.Is(err, cache.ErrNotFound) {
		t.Errorf("Get on the master back = %v, want ErrNotFound", err)
	}
}
