package ui

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/focusgate/focusgate"
)

const (
	// minute is the resolution of the last hour's figures and of the chart.
	minute      = time.Minute
	hourMinutes = 60
	// maxBreakdown bounds the rows of the per-model and per-key tables:
	// model names come from request bodies, and a client must not grow the
	// dashboard's memory by inventing them.
	maxBreakdown = 64
	otherRow     = "(other)"
)

// latencyBounds are the upper bounds, in milliseconds, of the retriever
// latency histogram: 1 ms to about 2 minutes in steps of 25%, so that a
// percentile read from it is within an eighth of the true value.
var latencyBounds = func() []float64 {
	var b []float64
	for v := 1.0; v < 150_000; v *= 1.25 {
		b = append(b, v)
	}
	return b
}()

type reasonKey struct {
	status focusgate.Status
	reason focusgate.Reason
}

// tally adds up records. Its zero value is ready to use.
type tally struct {
	requests, pruned, skipped, failedOpen int64
	reasons                               map[reasonKey]int64
	tokensBefore, tokensAfter             int64
	priced                                int64
	savedUSD, retrieverUSD                float64
	hit, miss, shared                     int64
	flagged                               int64
	latency                               []int64 // counts per latencyBounds bucket, plus one past the last
	// relooks counts requests whose newest page was a re-look, and
	// prunedPages those whose newest page went out pruned: their ratio is
	// the re-look rate.
	relooks, prunedPages int64
	// rescues counts the requests sent with every page pruned because they
	// did not fit the model's context window, by how that ended.
	rescued, stillTooLong, nothingToPrune int64
}

func (t *tally) add(r *Record) {
	t.requests++
	switch r.Status {
	case focusgate.StatusPruned:
		t.pruned++
	case focusgate.StatusSkipped:
		t.skipped++
	case focusgate.StatusFailedOpen:
		t.failedOpen++
	}
	if r.Reason != "" {
		if t.reasons == nil {
			t.reasons = map[reasonKey]int64{}
		}
		t.reasons[reasonKey{r.Status, r.Reason}]++
	}
	t.tokensBefore += int64(r.TokensBefore)
	t.tokensAfter += int64(r.TokensAfter)
	if r.Priced {
		t.priced++
		t.savedUSD += r.SavedUSD
		t.retrieverUSD += r.RetrieverUSD
	}
	t.flagged += int64(r.Flagged)
	if r.Relook {
		t.relooks++
	}
	switch r.Rescue {
	case focusgate.RescueRescued:
		t.rescued++
	case focusgate.RescueStillTooLong:
		t.stillTooLong++
	case focusgate.RescueNothingToPrune:
		t.nothingToPrune++
	}
	if n := len(r.Observations); n > 0 && r.Observations[n-1].Status == focusgate.StatusPruned {
		t.prunedPages++
	}
	// Look-ups and waits are counted per observation, as the metrics count
	// them.
	for _, o := range r.Observations {
		switch o.Cache {
		case focusgate.CacheHit:
			t.hit++
		case focusgate.CacheMiss:
			t.miss++
		case focusgate.CacheShared:
			t.shared++
		default:
			continue
		}
		if o.Cache != focusgate.CacheHit {
			if t.latency == nil {
				t.latency = make([]int64, len(latencyBounds)+1)
			}
			ms := float64(o.Retriever) / float64(time.Millisecond)
			i, _ := slices.BinarySearch(latencyBounds, ms)
			t.latency[i]++
		}
	}
}

func (t *tally) merge(u *tally) {
	t.relooks += u.relooks
	t.prunedPages += u.prunedPages
	t.rescued += u.rescued
	t.stillTooLong += u.stillTooLong
	t.nothingToPrune += u.nothingToPrune
	t.requests += u.requests
	t.pruned += u.pruned
	t.skipped += u.skipped
	t.failedOpen += u.failedOpen
	for k, v := range u.reasons {
		if t.reasons == nil {
			t.reasons = map[reasonKey]int64{}
		}
		t.reasons[k] += v
	}
	t.tokensBefore += u.tokensBefore
	t.tokensAfter += u.tokensAfter
	t.priced += u.priced
	t.savedUSD += u.savedUSD
	t.retrieverUSD += u.retrieverUSD
	t.hit += u.hit
	t.miss += u.miss
	t.shared += u.shared
	t.flagged += u.flagged
	if u.latency != nil {
		if t.latency == nil {
			t.latency = make([]int64, len(latencyBounds)+1)
		}
		for i, v := range u.latency {
			t.latency[i] += v
		}
	}
}

// quantile estimates the q-quantile of the retriever latency in ms,
// interpolating inside its bucket; ok is false without samples.
func (t *tally) quantile(q float64) (ms float64, ok bool) {
	var total int64
	for _, c := range t.latency {
		total += c
	}
	if total == 0 {
		return 0, false
	}
	rank := q * float64(total)
	var cum int64
	for i, c := range t.latency {
		if c == 0 || float64(cum+c) < rank {
			cum += c
			continue
		}
		lo, hi := 0.0, latencyBounds[min(i, len(latencyBounds)-1)]
		if i > 0 {
			lo = latencyBounds[i-1]
		}
		if i == len(latencyBounds) {
			return lo, true // past the last bound: report the bound
		}
		return lo + (hi-lo)*(rank-float64(cum))/float64(c), true
	}
	return latencyBounds[len(latencyBounds)-1], true
}

// Summary is the overview's figures over one period.
type Summary struct {
	Requests       int64         `json:"requests"`
	Pruned         int64         `json:"pruned"`
	Skipped        int64         `json:"skipped"`
	FailedOpen     int64         `json:"failed_open"`
	Reasons        []ReasonCount `json:"reasons"`
	TokensBefore   int64         `json:"tokens_before"`
	TokensAfter    int64         `json:"tokens_after"`
	Reduction      float64       `json:"reduction"` // share of observation tokens removed
	PricedRequests int64         `json:"priced_requests"`
	SavedUSD       float64       `json:"saved_usd"`     // action-model input avoided
	RetrieverUSD   float64       `json:"retriever_usd"` // what the retriever cost
	NetUSD         float64       `json:"net_usd"`
	CacheHit       int64         `json:"cache_hit"`
	CacheMiss      int64         `json:"cache_miss"`
	CacheShared    int64         `json:"cache_shared"`
	CacheHitRate   float64       `json:"cache_hit_rate"`
	RetrieverP50Ms *float64      `json:"retriever_p50_ms"` // null without a retriever wait
	RetrieverP95Ms *float64      `json:"retriever_p95_ms"`
	Flagged        int64         `json:"flagged"`
	Relooks        int64         `json:"relooks"`
	PrunedPages    int64         `json:"pruned_pages"`
	RelookRate     *float64      `json:"relook_rate"` // re-looks per page sent pruned; null before one is
	// Requests that did not fit their model's context window, sent with
	// every page pruned: taken by the upstream, refused again, or with
	// nothing left to prune.
	Rescued        int64 `json:"rescued"`
	StillTooLong   int64 `json:"still_too_long"`
	NothingToPrune int64 `json:"nothing_to_prune"`
}

// ReasonCount is how many requests were skipped or failed open for one
// reason.
type ReasonCount struct {
	Status focusgate.Status `json:"status"`
	Reason focusgate.Reason `json:"reason"`
	Count  int64            `json:"count"`
}

func (t *tally) summary() Summary {
	s := Summary{
		Requests: t.requests, Pruned: t.pruned, Skipped: t.skipped, FailedOpen: t.failedOpen,
		Reasons:      []ReasonCount{},
		TokensBefore: t.tokensBefore, TokensAfter: t.tokensAfter,
		PricedRequests: t.priced, SavedUSD: t.savedUSD, RetrieverUSD: t.retrieverUSD,
		NetUSD:   t.savedUSD - t.retrieverUSD,
		CacheHit: t.hit, CacheMiss: t.miss, CacheShared: t.shared,
		Flagged: t.flagged, Relooks: t.relooks, PrunedPages: t.prunedPages, RelookRate: t.relookRate(),
		Rescued: t.rescued, StillTooLong: t.stillTooLong, NothingToPrune: t.nothingToPrune,
	}
	for k, v := range t.reasons {
		s.Reasons = append(s.Reasons, ReasonCount{k.status, k.reason, v})
	}
	slices.SortFunc(s.Reasons, func(a, b ReasonCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Status, b.Status), cmp.Compare(a.Reason, b.Reason))
	})
	if t.tokensBefore > 0 {
		s.Reduction = 1 - float64(t.tokensAfter)/float64(t.tokensBefore)
	}
	if n := t.hit + t.miss + t.shared; n > 0 {
		s.CacheHitRate = float64(t.hit) / float64(n)
	}
	if v, ok := t.quantile(0.5); ok {
		s.RetrieverP50Ms = &v
	}
	if v, ok := t.quantile(0.95); ok {
		s.RetrieverP95Ms = &v
	}
	return s
}

// relookRate is the re-look rate: re-looks per newest page sent pruned. It
// is nil until a page has been pruned.
func (t *tally) relookRate() *float64 {
	if t.prunedPages == 0 {
		return nil
	}
	r := float64(t.relooks) / float64(t.prunedPages)
	return &r
}

// Point is one minute of the chart.
type Point struct {
	Time         int64   `json:"t"` // start of the minute, Unix milliseconds
	Requests     int64   `json:"requests"`
	Pruned       int64   `json:"pruned"`
	Skipped      int64   `json:"skipped"`
	FailedOpen   int64   `json:"failed_open"`
	TokensBefore int64   `json:"tokens_before"`
	TokensAfter  int64   `json:"tokens_after"`
	NetUSD       float64 `json:"net_usd"`
}

// Row is one line of a breakdown by model or by key.
type Row struct {
	Name         string   `json:"name"`
	Requests     int64    `json:"requests"`
	Pruned       int64    `json:"pruned"`
	FailedOpen   int64    `json:"failed_open"`
	TokensBefore int64    `json:"tokens_before"`
	TokensAfter  int64    `json:"tokens_after"`
	Reduction    float64  `json:"reduction"`
	NetUSD       float64  `json:"net_usd"`
	Relooks      int64    `json:"relooks"`
	PrunedPages  int64    `json:"pruned_pages"`
	RelookRate   *float64 `json:"relook_rate"`
}

type bucket struct {
	start time.Time
	tally
}

// stats aggregates every record since start, per minute over the last hour,
// and per model and key name since start.
type stats struct {
	mu      sync.Mutex
	started time.Time
	total   tally
	minutes [hourMinutes]bucket
	models  map[string]*tally
	keys    map[string]*tally
	formats map[string]*tally // by the newest page's format
}

func newStats(now time.Time) *stats {
	return &stats{started: now, models: map[string]*tally{}, keys: map[string]*tally{}, formats: map[string]*tally{}}
}

func (s *stats) add(r *Record) {
	start := r.Time.Truncate(minute)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total.add(r)
	b := &s.minutes[start.Unix()/int64(minute/time.Second)%hourMinutes]
	if b.start.Before(start) {
		*b = bucket{start: start}
	}
	// A record older than its slot's minute is outside the last hour.
	if b.start.Equal(start) {
		b.add(r)
	}
	row(s.models, r.Model).add(r)
	if r.Key != "" {
		row(s.keys, r.Key).add(r)
	}
	if r.Format != "" {
		row(s.formats, r.Format).add(r)
	}
}

// row is name's tally in m, or the shared "(other)" one once m is full.
func row(m map[string]*tally, name string) *tally {
	if name == "" {
		name = "(none)"
	}
	t, ok := m[name]
	if !ok {
		if len(m) >= maxBreakdown-1 {
			name = otherRow
			if t, ok = m[name]; ok {
				return t
			}
		}
		t = &tally{}
		m[name] = t
	}
	return t
}

// Overview is the overview page's data.
type Overview struct {
	Now     time.Time `json:"now"`
	Started time.Time `json:"started"`
	Capture bool      `json:"capture"`
	Total   Summary   `json:"total"`
	Hour    Summary   `json:"hour"`
	Series  []Point   `json:"series"` // the last hour, one point per minute, oldest first
	Models  []Row     `json:"models"`
	Keys    []Row     `json:"keys"`
	Formats []Row     `json:"formats"`
	Ring    RingUsage `json:"ring"`
	// Holdout compares the conversations of the pruned arm with those sent
	// whole; absent without FOCUSGATE_HOLDOUT.
	Holdout *focusgate.HoldoutReport `json:"holdout,omitempty"`
}

// RingUsage says how full the ring of recent requests is.
type RingUsage struct {
	Requests    int   `json:"requests"`
	Bytes       int64 `json:"bytes"`
	MaxRequests int   `json:"max_requests"`
	MaxBytes    int64 `json:"max_bytes"`
}

func (s *stats) overview(now time.Time) Overview {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := Overview{Now: now, Started: s.started, Total: s.total.summary(), Series: make([]Point, 0, hourMinutes)}
	var hour tally
	cur := now.Truncate(minute)
	for i := hourMinutes - 1; i >= 0; i-- {
		start := cur.Add(-time.Duration(i) * minute)
		p := Point{Time: start.UnixMilli()}
		if b := &s.minutes[start.Unix()/int64(minute/time.Second)%hourMinutes]; b.start.Equal(start) {
			hour.merge(&b.tally)
			p.Requests, p.Pruned, p.Skipped, p.FailedOpen = b.requests, b.pruned, b.skipped, b.failedOpen
			p.TokensBefore, p.TokensAfter = b.tokensBefore, b.tokensAfter
			p.NetUSD = b.savedUSD - b.retrieverUSD
		}
		o.Series = append(o.Series, p)
	}
	o.Hour = hour.summary()
	o.Models, o.Keys, o.Formats = rows(s.models), rows(s.keys), rows(s.formats)
	return o
}

func rows(m map[string]*tally) []Row {
	out := make([]Row, 0, len(m))
	for name, t := range m {
		r := Row{Name: name, Requests: t.requests, Pruned: t.pruned, FailedOpen: t.failedOpen,
			TokensBefore: t.tokensBefore, TokensAfter: t.tokensAfter, NetUSD: t.savedUSD - t.retrieverUSD,
			Relooks: t.relooks, PrunedPages: t.prunedPages, RelookRate: t.relookRate()}
		if t.tokensBefore > 0 {
			r.Reduction = 1 - float64(t.tokensAfter)/float64(t.tokensBefore)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Row) int { return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.Name, b.Name)) })
	return out
}
