package holdout

import (
	"cmp"
	"math"
	"slices"
	"sync"

	"github.com/focusgate/focusgate"
)

// The figures compared per conversation, in the order they are reported.
const (
	mSteps = iota
	mInput
	mInputPerStep
	mCacheRead
	mUSD
	mRepeatShare
	mErrors
	numMetrics
)

// metricInfo names each compared figure for the report.
var metricInfo = [numMetrics]struct{ name, label string }{
	mSteps:        {"steps", "steps per conversation"},
	mInput:        {"input_tokens", "input tokens per conversation"},
	mInputPerStep: {"input_tokens_per_step", "input tokens per step"},
	mCacheRead:    {"cache_read_tokens", "cache reads per conversation (tokens)"},
	mUSD:          {"usd", "dollars per conversation (action model and retriever)"},
	mRepeatShare:  {"repeat_share", "share of steps that repeat a page"},
	mErrors:       {"errors", "upstream errors per conversation"},
}

// values are the figures of c, one per metric; ok is false for a figure
// the conversation does not have (dollars of a model without a price).
func values(c Conversation) (v [numMetrics]float64, ok [numMetrics]bool) {
	for i := range ok {
		ok[i] = true
	}
	steps := float64(max(c.Steps, 1))
	v[mSteps] = float64(c.Steps)
	v[mInput] = float64(c.InputTokens)
	v[mInputPerStep] = float64(c.InputTokens) / steps
	v[mCacheRead] = float64(c.CacheReadTokens)
	v[mUSD], ok[mUSD] = c.USD, c.Priced
	v[mRepeatShare] = float64(c.RepeatSteps) / steps
	v[mErrors] = float64(c.Errors)
	return v, ok
}

// stat is a running mean and variance (Welford's method).
type stat struct {
	N    int
	Mean float64
	m2   float64
}

func (s *stat) add(x float64) {
	s.N++
	d := x - s.Mean
	s.Mean += d / float64(s.N)
	s.m2 += d * (x - s.Mean)
}

// statOfSums is the stat of n values whose sum and sum of squares are
// given, as the team's tally in Redis keeps them: those sums add up across
// replicas, where Welford's running mean does not.
func statOfSums(n, sum, squares float64) stat {
	if n < 1 {
		return stat{}
	}
	mean := sum / n
	return stat{N: int(n), Mean: mean, m2: squares - sum*mean}
}

// variance is the sample variance; zero below two values. Rounding can
// leave m2 a hair below zero, which would make the interval NaN and the
// dashboard's JSON unwritable.
func (s stat) variance() float64 {
	if s.N < 2 {
		return 0
	}
	return max(0, s.m2/float64(s.N-1))
}

// arm is what is known of one arm's conversations.
type arm struct {
	conversations, steps int
	metrics              [numMetrics]stat
}

func (a *arm) add(c Conversation) {
	a.conversations++
	a.steps += c.Steps
	v, ok := values(c)
	for i := range v {
		if ok[i] {
			a.metrics[i].add(v[i])
		}
	}
}

// pair is the two arms of one comparison: all traffic, or one model's or
// agent's.
type pair [2]arm

// Tally sums up the conversations that ended, per arm, overall and per model
// and agent, for the dashboard and `focusgate eval`. It is a Sink, and safe
// for concurrent use.
type Tally struct {
	share float64

	mu     sync.Mutex
	all    pair
	groups [2]map[string]*pair // by model, then by agent
}

// maxGroups bounds the models and agents a Tally tells apart; later names
// are summed as "other".
const maxGroups = 50

// MinGroupConversations is how many conversations each arm of a model or an
// agent needs before its comparison is reported: with fewer, the interval is
// too wide to say anything.
const MinGroupConversations = 10

// NewTally returns a Tally for a holdout of the given share (reported as is).
func NewTally(share float64) *Tally {
	return &Tally{share: share, groups: [2]map[string]*pair{{}, {}}}
}

// End adds a conversation that ended.
func (t *Tally) End(c Conversation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.all[c.Arm].add(c)
	for kind, name := range [2]string{c.Model, c.Agent} {
		if name == "" {
			name = "unknown"
		}
		g := t.groups[kind]
		p, ok := g[name]
		if !ok && len(g) >= maxGroups {
			name = "other"
			p, ok = g[name]
		}
		if !ok {
			p = &pair{}
			g[name] = p
		}
		p[c.Arm].add(c)
	}
}

// Report compares the arms as they stand: the conversations this replica
// ended.
func (t *Tally) Report() focusgate.HoldoutReport {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := buildReport(t.share, t.all, t.groups)
	r.Scope = focusgate.ScopeReplica
	return r
}

// buildReport compares the arms overall, and per model and agent (groups,
// in that order) for those with enough conversations in each arm.
func buildReport(share float64, all pair, groups [2]map[string]*pair) focusgate.HoldoutReport {
	r := focusgate.HoldoutReport{Share: share, Metrics: compare(all)}
	for _, a := range Arms {
		r.Arms = append(r.Arms, focusgate.ArmTotal{Arm: a.String(), Conversations: all[a].conversations, Steps: all[a].steps})
	}
	for kind, out := range [2]*[]focusgate.Group{&r.ByModel, &r.ByAgent} {
		for name, p := range groups[kind] {
			if p[focusgate.ArmPruned].conversations < MinGroupConversations || p[focusgate.ArmHoldout].conversations < MinGroupConversations {
				continue
			}
			*out = append(*out, focusgate.Group{Name: name, Conversations: [2]int{p[focusgate.ArmPruned].conversations, p[focusgate.ArmHoldout].conversations}, Metrics: compare(*p)})
		}
		slices.SortFunc(*out, func(a, b focusgate.Group) int {
			return cmp.Or(cmp.Compare(b.Conversations[0]+b.Conversations[1], a.Conversations[0]+a.Conversations[1]), cmp.Compare(a.Name, b.Name))
		})
	}
	return r
}

func compare(p pair) []focusgate.Comparison {
	out := make([]focusgate.Comparison, numMetrics)
	for i := range out {
		out[i] = comparison(p[focusgate.ArmPruned].metrics[i], p[focusgate.ArmHoldout].metrics[i])
		out[i].Name, out[i].Label = metricInfo[i].name, metricInfo[i].label
	}
	return out
}

// z95 is the normal quantile of a two-sided 95% interval.
const z95 = 1.959963984540054

// comparison is Welch's interval for the difference of two means, and how
// many conversations would settle it.
func comparison(pruned, held stat) focusgate.Comparison {
	c := focusgate.Comparison{Pruned: pruned.Mean, Holdout: held.Mean, N: [2]int{pruned.N, held.N}, Diff: pruned.Mean - held.Mean, More: -1}
	if held.Mean != 0 {
		rel := c.Diff / held.Mean
		c.Relative = &rel
	}
	if pruned.N < 2 || held.N < 2 {
		c.Verdict = "too few"
		c.Low, c.High = c.Diff, c.Diff
		return c
	}
	vp, vh := pruned.variance()/float64(pruned.N), held.variance()/float64(held.N)
	se := math.Sqrt(vp + vh)
	half := tQuantile975(welchDF(vp, vh, pruned.N, held.N)) * se
	c.Low, c.High = c.Diff-half, c.Diff+half
	switch {
	case c.Low > 0:
		c.Verdict = "higher"
	case c.High < 0:
		c.Verdict = "lower"
	default:
		c.Verdict = "unclear"
		c.More = more(pruned, held, c.Diff)
	}
	return c
}

// more estimates how many more conversations, split between the arms as
// now, make the interval's half-width no wider than |diff|, the difference
// observed. With no difference observed, it aims at a tenth of the
// holdout's mean.
func more(pruned, held stat, diff float64) int {
	n := float64(pruned.N + held.N)
	h := float64(held.N) / n
	d := math.Abs(diff)
	if d == 0 {
		d = math.Abs(held.Mean) / 10
	}
	spread := pruned.variance()/(1-h) + held.variance()/h
	if d == 0 || spread == 0 {
		return -1
	}
	need := z95 * z95 * spread / (d * d)
	if need > 1e9 {
		return -1
	}
	return max(0, int(math.Ceil(need-n)))
}

// welchDF is the Welch–Satterthwaite degrees of freedom.
func welchDF(vp, vh float64, np, nh int) float64 {
	den := vp*vp/float64(np-1) + vh*vh/float64(nh-1)
	if den == 0 {
		return float64(np + nh - 2)
	}
	return (vp + vh) * (vp + vh) / den
}

// tQuantile975 is Student's t quantile at 0.975 for df degrees of freedom,
// by the Cornish–Fisher expansion around the normal quantile: 3% short at
// df = 2, within 0.2% from df = 5, exact in the limit. Fewer than two
// conversations in an arm are never compared.
func tQuantile975(df float64) float64 {
	if df < 1 {
		df = 1
	}
	z := z95
	z3, z5, z7 := z*z*z, z*z*z*z*z, z*z*z*z*z*z*z
	return z + (z3+z)/(4*df) + (5*z5+16*z3+3*z)/(96*df*df) + (3*z7+19*z5+17*z3-15*z)/(384*df*df*df)
}

var _ focusgate.HoldoutReporter = (*Tally)(nil)
