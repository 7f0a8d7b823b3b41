package holdout

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/focusgate/focusgate"
)

func tallyOf(pruned, held []Conversation) *Tally {
	t := NewTally(0.05)
	for _, c := range pruned {
		c.Arm = focusgate.ArmPruned
		t.End(c)
	}
	for _, c := range held {
		c.Arm = focusgate.ArmHoldout
		t.End(c)
	}
	return t
}

func withSteps(model string, steps ...int) []Conversation {
	out := make([]Conversation, len(steps))
	for i, s := range steps {
		out[i] = Conversation{Model: model, Agent: "agent", Steps: s, InputTokens: 1000 * s, Priced: true, USD: 0.01 * float64(s)}
	}
	return out
}

func metric(t *testing.T, r focusgate.HoldoutReport, name string) focusgate.Comparison {
	t.Helper()
	for _, m := range r.Metrics {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no metric %q", name)
	return focusgate.Comparison{}
}

// The difference of the arms' means, with Welch's 95% interval: here
// pruned 13 ± s², holdout 23, six degrees of freedom (t = 2.447).
func TestWelchInterval(t *testing.T) {
	r := tallyOf(withSteps("m", 10, 12, 14, 16), withSteps("m", 20, 22, 24, 26)).Report()
	m := metric(t, r, "steps")
	half := 2.4469 * math.Sqrt(20.0/3/4*2)
	if m.Pruned != 13 || m.Holdout != 23 || m.Diff != -10 || m.N != [2]int{4, 4} {
		t.Errorf("means %v and %v, diff %v, n %v", m.Pruned, m.Holdout, m.Diff, m.N)
	}
	if math.Abs(m.Low-(-10-half)) > 0.01*half || math.Abs(m.High-(-10+half)) > 0.01*half {
		t.Errorf("interval [%v, %v], want [%v, %v]", m.Low, m.High, -10-half, -10+half)
	}
	if m.Verdict != "lower" || m.More != -1 {
		t.Errorf("verdict %q, more %d; want lower, -1", m.Verdict, m.More)
	}
	if m.Relative == nil || math.Abs(*m.Relative-(-10.0/23)) > 1e-12 {
		t.Errorf("relative %v, want %v", m.Relative, -10.0/23)
	}
	if got := metric(t, r, "input_tokens_per_step"); got.Pruned != 1000 || got.Verdict != "unclear" || got.More != -1 {
		t.Errorf("a figure equal in both arms, with no spread: %+v", got)
	}
	if r.Arms[0] != (focusgate.ArmTotal{Arm: "pruned", Conversations: 4, Steps: 52}) || r.Arms[1] != (focusgate.ArmTotal{Arm: "holdout", Conversations: 4, Steps: 92}) {
		t.Errorf("arms %+v", r.Arms)
	}
}

// An interval that straddles zero says how many more conversations would
// make it as narrow as the difference seen: 1.96² × (2/½ + 2/½) / 1² ≈ 31
// in all, 27 more than the 4 there are.
func TestUnclearSaysHowManyMore(t *testing.T) {
	r := tallyOf(withSteps("m", 1, 3), withSteps("m", 2, 4)).Report()
	m := metric(t, r, "steps")
	if m.Verdict != "unclear" || m.More != 27 {
		t.Errorf("verdict %q, %d more; want unclear, 27", m.Verdict, m.More)
	}
	if m.Low >= m.Diff || m.High <= m.Diff || m.Low >= 0 || m.High <= 0 {
		t.Errorf("interval [%v, %v] around %v", m.Low, m.High, m.Diff)
	}
	if one := metric(t, tallyOf(withSteps("m", 1), withSteps("m", 2, 4)).Report(), "steps"); one.Verdict != "too few" {
		t.Errorf("one conversation in an arm: verdict %q", one.Verdict)
	}
}

// Dollars are compared over priced conversations only.
func TestUnpricedConversationsLeaveDollarsOut(t *testing.T) {
	pruned := withSteps("m", 2, 2, 2)
	pruned[0].Priced, pruned[0].USD = false, 0
	m := metric(t, tallyOf(pruned, withSteps("m", 4, 4)).Report(), "usd")
	if m.N != [2]int{2, 2} || m.Pruned != 0.02 {
		t.Errorf("usd over %v conversations, pruned mean %v; want 2 and 2, 0.02", m.N, m.Pruned)
	}
}

// A model or an agent is compared on its own once each arm has enough
// conversations of it.
func TestGroupsNeedEnoughConversations(t *testing.T) {
	many := func(model string, n, steps int) []Conversation {
		var out []Conversation
		for i := range n {
			out = append(out, withSteps(model, steps+i%3)...)
		}
		return out
	}
	pruned := append(many("gpt-4.1", MinGroupConversations, 5), many("o3", 50, 5)...)
	held := append(many("gpt-4.1", MinGroupConversations, 8), many("o3", MinGroupConversations-1, 8)...)
	r := tallyOf(pruned, held).Report()
	if len(r.ByModel) != 1 || r.ByModel[0].Name != "gpt-4.1" || r.ByModel[0].Conversations != [2]int{MinGroupConversations, MinGroupConversations} {
		t.Errorf("by model: %+v", r.ByModel)
	}
	if len(r.ByAgent) != 1 || r.ByAgent[0].Name != "agent" {
		t.Errorf("by agent: %+v", r.ByAgent)
	}
}

// Student's t quantile is close enough from two degrees of freedom on.
func TestTQuantile(t *testing.T) {
	for df, want := range map[float64]float64{2: 4.303, 3: 3.182, 5: 2.571, 10: 2.228, 30: 2.042, 1000: 1.962} {
		if got := tQuantile975(df); math.Abs(got-want)/want > 0.035 || (df >= 5 && math.Abs(got-want)/want > 0.002) {
			t.Errorf("t(0.975, %v) = %v, want %v", df, got, want)
		}
	}
}

// Whatever the conversations, the report is valid JSON for the dashboard and
// every interval holds its difference.
func FuzzReport(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, uint8(3))
	f.Add([]byte{200, 200, 200, 200, 200, 200}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, heldEvery uint8) {
		tally := NewTally(0.05)
		for i, b := range data {
			arm := focusgate.ArmPruned
			if heldEvery > 0 && i%int(heldEvery) == 0 {
				arm = focusgate.ArmHoldout
			}
			tally.End(Conversation{Arm: arm, Model: string(rune('a' + b%3)), Steps: int(b % 7), InputTokens: int(b) * 997,
				CacheReadTokens: int(b) * 13, USD: float64(b) / 3, Priced: b%5 != 0, RepeatSteps: int(b % 2), Errors: int(b % 3)})
		}
		r := tally.Report()
		if _, err := json.Marshal(r); err != nil {
			t.Fatalf("report does not encode: %v", err)
		}
		for _, m := range r.Metrics {
			if m.Low > m.Diff+1e-9*math.Abs(m.Diff) || m.High < m.Diff-1e-9*math.Abs(m.Diff) || m.More < -1 {
				t.Errorf("%s: %v not in [%v, %v], more %d", m.Name, m.Diff, m.Low, m.High, m.More)
			}
		}
	})
}
