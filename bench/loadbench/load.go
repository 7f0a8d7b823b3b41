package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/focusgate/focusgate/proxy"
)

// Names of the targets, as the report shows them.
const (
	direct       = "direct"
	defaultProxy = "default-proxy" // httputil.ReverseProxy with the standard library's defaults
	reverseProxy = "reverse-proxy" // httputil.ReverseProxy tuned like focusgate
	gateway      = "focusgate"
)

// target is where requests go: the upstream itself, or a proxy in front of it.
type target struct {
	name, url string
	proc      *process // nil for the upstream, which runs in this process
}

// bodyCase is one kind of request and what every answer to it must be.
type bodyCase struct {
	name string
	body []byte
	// bodies, when set, makes the body of each request instead: the nth
	// request of the case, counted by seq, sends bodies(n).
	bodies     func(n uint64) []byte
	seq        *atomic.Uint64
	answerSize int64
	// gatewayStatus is the X-Focusgate-Status focusgate must answer with.
	gatewayStatus string
	// cache, when set, is the X-Focusgate-Cache focusgate must answer with:
	// "hit" when the selection must be found in its cache.
	cache string
}

// check makes sure that a run measures what it claims: every answer is the
// upstream's, whole, and focusgate did to the request what the case expects.
func (c bodyCase) check(t target, resp *http.Response, n int64) error {
	switch {
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("%s: status %s", t.name, resp.Status)
	case n != c.answerSize:
		return fmt.Errorf("%s: answer of %d bytes, want %d", t.name, n, c.answerSize)
	case t.name != gateway:
		return nil
	case resp.Header.Get(proxy.HeaderStatus) != c.gatewayStatus:
		return fmt.Errorf("focusgate: %s = %q, want %q", proxy.HeaderStatus, resp.Header.Get(proxy.HeaderStatus), c.gatewayStatus)
	case c.cache != "" && resp.Header.Get(proxy.HeaderCache) != c.cache:
		return fmt.Errorf("focusgate: %s = %q, want %q", proxy.HeaderCache, resp.Header.Get(proxy.HeaderCache), c.cache)
	}
	return nil
}

// result is what one run of a case against a target measured.
type result struct {
	round    int
	body     string
	clients  int
	target   string
	requests int
	elapsed  time.Duration
	p50, p99 time.Duration
	// cpu is the proxy process's CPU time per request, and peakRSS its peak
	// resident memory during the case; both are zero when not measured.
	cpu     time.Duration
	peakRSS int64
}

func (r result) rps() float64 { return float64(r.requests) / r.elapsed.Seconds() }

// loader drives targets with requests through one shared client.
type loader struct {
	client   *http.Client
	warmup   time.Duration
	duration time.Duration
	requests int // when positive, the number of requests per run instead of duration
	log      *slog.Logger
}

// runTogether warms the targets up with the case's requests, then measures
// them all at once: each of clients concurrent clients sends one request to
// every target, in an order shuffled anew each time, before it sends the next
// to any. A moment the machine is busy then falls on every target alike,
// which measuring them one after the other cannot promise. Each target's CPU
// time is its own process's, divided by the requests it served.
func (l *loader) runTogether(ctx context.Context, c bodyCase, clients int, ts []target) ([]result, error) {
	send := func(ctx context.Context, k int) error {
		_, err := l.send(ctx, c, ts[k])
		return err
	}
	for _, t := range ts {
		if t.proc != nil {
			l.warn(t.proc.resetPeakRSS())
		}
	}
	if _, _, err := drive(ctx, clients, 0, len(ts), l.warmup, send); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	cpuBefore := make([]time.Duration, len(ts))
	cpuErr := make([]error, len(ts))
	for i, t := range ts {
		if t.proc != nil {
			cpuBefore[i], cpuErr[i] = t.proc.cpuTime()
		}
	}
	lats, elapsed, err := drive(ctx, clients, l.requests, len(ts), l.duration, send)
	if err != nil {
		return nil, err
	}
	out := make([]result, len(ts))
	for i, t := range ts {
		lat := lats[i]
		res := result{
			body: c.name, clients: clients, target: t.name,
			requests: len(lat), elapsed: elapsed,
			p50: percentile(lat, 0.50), p99: percentile(lat, 0.99),
		}
		if t.proc != nil {
			cpuAfter, err := t.proc.cpuTime()
			if err = errors.Join(cpuErr[i], err); err == nil && len(lat) > 0 {
				res.cpu = (cpuAfter - cpuBefore[i]) / time.Duration(len(lat))
			}
			l.warn(err)
			res.peakRSS, err = t.proc.peakRSS()
			l.warn(err)
		}
		out[i] = res
	}
	return out, nil
}

// warn logs a failure to read a proxy's statistics, which leaves them out of
// the report but does not spoil the latencies.
func (l *loader) warn(err error) {
	if err != nil {
		l.log.Warn("process statistics unavailable", "err", err)
	}
}

// send posts the case's body to the target, reads the whole answer and
// checks it. The response it returns, body read and closed, is for its
// headers.
func (l *loader) send(ctx context.Context, c bodyCase, t target) (*http.Response, error) {
	body := c.body
	if c.bodies != nil {
		body = c.bodies(c.seq.Add(1))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-loadbench")
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return nil, err
	}
	return resp, c.check(t, resp, n)
}

// drive runs send from workers goroutines at once, each sending its next
// request when the last one is answered. Each request goes to one of kinds
// targets, the kind send is given: a worker sends one request of every kind,
// in an order shuffled anew, before it sends the next of any. It stops when
// each kind has been sent requests or, when requests is zero, when d has
// passed. It returns the latencies of each kind, sorted, and the time the
// whole run took. The first error stops the run.
func drive(ctx context.Context, workers, requests, kinds int, d time.Duration, send func(ctx context.Context, kind int) error) ([][]time.Duration, time.Duration, error) {
	var left atomic.Int64
	left.Store(int64(requests))
	deadline := time.Now().Add(d)
	more := func() bool {
		if requests > 0 {
			return left.Add(-1) >= 0
		}
		return time.Now().Before(deadline)
	}

	latencies := make([][][]time.Duration, workers)
	g, ctx := errgroup.WithContext(ctx)
	start := time.Now()
	for w := range workers {
		latencies[w] = make([][]time.Duration, kinds)
		g.Go(func() error {
			order := make([]int, kinds)
			for i := range order {
				order[i] = i
			}
			for more() {
				rand.Shuffle(kinds, func(i, j int) { order[i], order[j] = order[j], order[i] })
				for _, k := range order {
					t0 := time.Now()
					if err := send(ctx, k); err != nil {
						return err
					}
					latencies[w][k] = append(latencies[w][k], time.Since(t0))
				}
			}
			return nil
		})
	}
	err := g.Wait()
	elapsed := time.Since(start)
	all := make([][]time.Duration, kinds)
	for k := range all {
		for w := range workers {
			all[k] = append(all[k], latencies[w][k]...)
		}
		slices.Sort(all[k])
	}
	return all, elapsed, err
}

// percentile returns the q-quantile of sorted latencies by the nearest-rank
// method: the smallest value that at least q of the values do not exceed.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
