package holdout

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
)

func chatBody(task int, extra string) []byte {
	return fmt.Appendf(nil, `{"model":"gpt-4.1","messages":[{"role":"system","content":"You browse."},{"role":"user","content":"Task %d"}%s]}`, task, extra)
}

// Two replicas with the same key put every conversation in the same arm,
// from its first request to its last, without sharing anything; a
// different key draws another split.
func TestAssignmentIsStickyAcrossReplicas(t *testing.T) {
	a := New(Options{Share: 0.3, Key: "team-secret"})
	b := New(Options{Share: 0.3, Key: "team-secret"})
	other := New(Options{Share: 0.3, Key: "another"})
	differ := 0
	for task := range 2000 {
		first := a.Assign(focusgate.Request{API: focusgate.APIChat, Body: chatBody(task, "")})
		later := b.Assign(focusgate.Request{API: focusgate.APIChat, Body: chatBody(task, `,{"role":"assistant","content":"clicked"},{"role":"tool","content":"page"}`)})
		if !first.OK || first != later {
			t.Fatalf("task %d: first request %+v, a later one on another replica %+v", task, first, later)
		}
		if other.Assign(focusgate.Request{API: focusgate.APIChat, Body: chatBody(task, "")}).Arm != first.Arm {
			differ++
		}
	}
	// Two independent 30% splits disagree on 42% of conversations.
	if differ < 600 || differ > 1100 {
		t.Errorf("another key changed the arm of %d of 2000 conversations, want about 840", differ)
	}
}

// The held-out share is the configured one, within its binomial bounds
// (five standard deviations: the hash is fixed, so this never flakes, and a
// biased hash would miss by far more).
func TestShareWithinBinomialBounds(t *testing.T) {
	const n = 20000
	for _, share := range []float64{0, 0.01, 0.05, 0.5, 1} {
		h := New(Options{Share: share})
		held := 0
		for task := range n {
			if h.Assign(focusgate.Request{API: focusgate.APIChat, Body: chatBody(task, "")}).Arm == focusgate.ArmHoldout {
				held++
			}
		}
		mean, sd := n*share, math.Sqrt(n*share*(1-share))
		if math.Abs(float64(held)-mean) > 5*sd {
			t.Errorf("share %v: %d of %d held out, want %.0f ± %.0f", share, held, n, mean, 5*sd)
		}
	}
}

// sink keeps the conversations that ended.
type sink struct{ ended []Conversation }

func (s *sink) End(c Conversation) { s.ended = append(s.ended, c) }

// clock is a hand-moved clock.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// A conversation is counted once it has gone quiet for the idle time, with
// the figures of all its steps: tokens as the upstream reported them (else
// estimated from the bytes sent), errors, repeats and dollars.
func TestConversationCountsOnceQuiet(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	s := &sink{}
	h := New(Options{Share: 0.5, Idle: time.Minute, Sinks: []Sink{s}, Now: clk.Now})
	tk := h.Assign(focusgate.Request{API: focusgate.APIChat, Body: chatBody(1, "")})
	steps := []focusgate.Step{
		{Model: "gpt-4.1", Agent: "codex", Status: 200, Usage: focusgate.UpstreamUsage{Input: 1000, CacheRead: 0, Output: 50, Reported: true}},
		{Model: "gpt-4.1", Agent: "codex", Status: 200, Repeat: true, RetrieverUSD: 0.001, Usage: focusgate.UpstreamUsage{Input: 3000, CacheRead: 1000, Output: 50, Reported: true}},
		{Model: "gpt-4.1", Agent: "codex", Status: 529, SentBytes: 4000},
		{Model: "gpt-4.1", Agent: "codex", Status: focusgate.StatusClientGone, Usage: focusgate.UpstreamUsage{Reported: true}},
	}
	for _, st := range steps {
		h.Record(tk, st)
		clk.now = clk.now.Add(20 * time.Second)
	}
	h.Sweep()
	if len(s.ended) != 0 {
		t.Fatalf("ended after 20 quiet seconds: %+v", s.ended)
	}
	clk.now = clk.now.Add(40 * time.Second)
	h.Sweep()
	if len(s.ended) != 1 {
		t.Fatalf("%d conversations ended after a quiet minute, want 1", len(s.ended))
	}
	got := s.ended[0]
	want := Conversation{
		Arm: tk.Arm, Model: "gpt-4.1", Agent: "codex", Steps: 4,
		InputTokens: 1000 + 3000 + 1000, CacheReadTokens: 1000, OutputTokens: 100,
		EstimatedSteps: 1, RepeatSteps: 1, Errors: 1, RetrieverUSD: 0.001, Priced: true,
		// gpt-4.1: $2 in, $8 out per million.
		USD:   (5000*2+100*8)/1e6 + 0.001,
		Start: time.Unix(1000, 0), End: time.Unix(1060, 0), // a client that went away is no upstream error
	}
	if math.Abs(got.USD-want.USD) > 1e-12 {
		t.Errorf("USD %v, want %v", got.USD, want.USD)
	}
	got.USD = want.USD
	if got != want {
		t.Errorf("conversation\n got %+v\nwant %+v", got, want)
	}
	if h.Open() != 0 {
		t.Errorf("%d conversations still open", h.Open())
	}
}

// Memory is bounded: past MaxOpen conversations, the one quiet the longest
// counts as ended; Flush ends the rest. A request that names no
// conversation is not accounted for.
func TestOpenConversationsAreCapped(t *testing.T) {
	clk := &clock{now: time.Unix(0, 0)}
	s := &sink{}
	h := New(Options{Share: 0.5, MaxOpen: 3, Sinks: []Sink{s}, Now: clk.Now})
	for task := range 5 {
		h.Record(h.Assign(focusgate.Request{API: focusgate.APIChat, Body: chatBody(task, "")}), focusgate.Step{Model: "m", Status: 200})
		clk.now = clk.now.Add(time.Second)
	}
	h.Record(focusgate.Ticket{}, focusgate.Step{Model: "m", Status: 200})
	if h.Open() != 3 || len(s.ended) != 2 {
		t.Fatalf("%d open, %d ended; want 3 and 2", h.Open(), len(s.ended))
	}
	if s.ended[0].Start != time.Unix(0, 0) || s.ended[1].Start != time.Unix(1, 0) {
		t.Errorf("ended first: %v, %v; want the two oldest", s.ended[0].Start, s.ended[1].Start)
	}
	h.Flush()
	if h.Open() != 0 || len(s.ended) != 5 {
		t.Errorf("after Flush: %d open, %d ended", h.Open(), len(s.ended))
	}
	if slices.ContainsFunc(s.ended, func(c Conversation) bool { return c.Priced }) {
		t.Error("a conversation of a model without a price counts as priced")
	}
}
