package holdout

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/internal/redistest"
)

// go-redis logs every failed dial on its own, as the gateway does not let
// it (cmd/focusgate): the outage tests would fill the output.
func init() { redis.SetLogger(&logging.VoidLogger{}) }

// callTimeout bounds each Redis call in these tests: the production bound
// is for a healthy network, and a loaded test machine can take longer
// without anything being wrong. Tests of an outage stop the server.
const callTimeout = 5 * time.Second

// safeClock is a hand-moved clock that the background writer may read
// while the test moves it.
type safeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *safeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *safeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// lockedSink keeps the conversations a replica ended, from any goroutine.
type lockedSink struct {
	mu    sync.Mutex
	ended []Conversation
}

func (s *lockedSink) End(c Conversation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = append(s.ended, c)
}

func (s *lockedSink) all() []Conversation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Conversation(nil), s.ended...)
}

// replica is one gateway's holdout in a test: its sinks, as the gateway
// wires them, and the report its dashboard shows.
type replica struct {
	*Holdout
	ended   *lockedSink
	tally   *Tally
	metrics *prometheus.Registry
}

func (r replica) report() focusgate.HoldoutReport { return r.Reporter(r.tally).Report() }

// newReplicas starts n holdouts sharing the Redis at url, with the same key
// (one of the test's own, so that tests sharing a server never meet) and
// the clock clk.
func newReplicas(t *testing.T, url string, cluster bool, n int, clk *safeClock, configure ...func(*Options)) []replica {
	t.Helper()
	key := "test-" + rand.Text()
	var out []replica
	for range n {
		r := replica{ended: &lockedSink{}, tally: NewTally(0.5), metrics: prometheus.NewRegistry()}
		opts := Options{Share: 0.5, Key: key, Idle: time.Minute, Now: clk.Now,
			Sinks: []Sink{NewMetrics(r.metrics), r.tally, r.ended}}
		for _, c := range configure {
			c(&opts)
		}
		h, err := NewShared(opts, RedisOptions{URL: url, Cluster: cluster, Timeout: callTimeout,
			ProbeInterval: time.Hour, // the tests probe when they mean to
			Logger:        slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Flush)
		r.Holdout = h
		RegisterOpen(r.metrics, h)
		out = append(out, r)
	}
	return out
}

// converse sends conversations of steps each through the replicas in turn,
// request by request, as a round-robin load balancer without affinity does:
// conversation c's step s goes to replica (c*steps+s) mod n. Every step
// reports usage, so that figures differ between conversations.
func converse(reps []replica, first, conversations, steps int, clk *safeClock) {
	for c := first; c < first+conversations; c++ {
		for s := range steps {
			r := reps[(c*steps+s)%len(reps)]
			t := r.Assign(focusgate.Request{API: focusgate.APIChat, Body: chatBody(c, strings.Repeat(`,{"role":"user","content":"more"}`, s))})
			r.Record(t, focusgate.Step{Model: "gpt-4.1", Agent: fmt.Sprintf("agent-%d", c%3), Status: 200,
				Usage: focusgate.UpstreamUsage{Input: 1000 * (s + 1) * (c%4 + 1), Output: 10, Reported: true}})
			clk.Add(time.Second)
		}
	}
}

// counted is what the replicas' metrics say of the conversations that
// ended: how many, and their steps.
func counted(t *testing.T, reps []replica) (conversations, steps float64) {
	t.Helper()
	for _, r := range reps {
		mfs, err := r.metrics.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				switch mf.GetName() {
				case "focusgate_conversations_total":
					conversations += m.GetCounter().GetValue()
				case "focusgate_conversation_steps":
					steps += m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	return conversations, steps
}

// endAll writes what the replicas queued, lets the idle time pass, and has
// every replica sweep at once, as their timers would.
func endAll(reps []replica, clk *safeClock) {
	for _, r := range reps {
		r.Drain()
	}
	clk.Add(2 * time.Minute)
	var wg sync.WaitGroup
	for _, r := range reps {
		wg.Go(r.Sweep)
	}
	wg.Wait()
}

func totals(r focusgate.HoldoutReport) (conversations, steps int) {
	for _, a := range r.Arms {
		conversations += a.Conversations
		steps += a.Steps
	}
	return conversations, steps
}

// Two replicas sharing one Redis, behind a round-robin balancer without
// affinity, count 30 conversations of 8 steps as 30 conversations and 240
// steps: each is ended by exactly one of them, which counts it in its
// metrics, and both dashboards show the same team comparison, the one a
// single replica would have shown had it served everything.
func TestReplicasShareTheirAccounting(t *testing.T) {
	clk := &safeClock{now: time.Unix(1_000_000, 0)}
	reps := newReplicas(t, redistest.Shared(t), false, 2, clk)
	converse(reps, 0, 30, 8, clk)
	endAll(reps, clk)

	if c, s := counted(t, reps); c != 30 || s != 240 {
		t.Errorf("the replicas' metrics count %v conversations and %v steps, want 30 and 240", c, s)
	}
	var ended []Conversation
	for _, r := range reps {
		ended = append(ended, r.ended.all()...)
	}
	if len(ended) != 30 {
		t.Fatalf("%d conversations ended, want 30", len(ended))
	}
	single := NewTally(0.5) // what one replica serving everything would show
	for _, c := range ended {
		if c.Steps != 8 || c.Model != "gpt-4.1" || !strings.HasPrefix(c.Agent, "agent-") || !c.Priced || c.End.Sub(c.Start) != 7*time.Second {
			t.Errorf("conversation %+v: want 8 steps of gpt-4.1, priced, 7 s long", c)
		}
		single.End(c)
	}
	a, b := reps[0].report(), reps[1].report()
	if a.Scope != focusgate.ScopeTeam || a.Note != "" {
		t.Errorf("scope %q, note %q: want the team's figures, nothing to note", a.Scope, a.Note)
	}
	if !sameReport(t, a, b) {
		t.Errorf("the dashboards differ:\n%+v\n%+v", a, b)
	}
	if c, s := totals(a); c != 30 || s != 240 {
		t.Errorf("the dashboards show %d conversations and %d steps, want 30 and 240", c, s)
	}
	want := single.Report()
	if fmt.Sprint(a.Arms) != fmt.Sprint(want.Arms) {
		t.Errorf("arms %+v, one replica would show %+v", a.Arms, want.Arms)
	}
	for i, m := range a.Metrics {
		w := want.Metrics[i]
		if m.Name != w.Name || m.N != w.N || m.Verdict != w.Verdict || !near(m.Pruned, w.Pruned) || !near(m.Holdout, w.Holdout) || !near(m.Low, w.Low) || !near(m.High, w.High) {
			t.Errorf("%s from the team's sums: %+v\nfrom one replica's tally: %+v", m.Name, m, w)
		}
	}
	if len(a.ByAgent) != len(want.ByAgent) || len(a.ByModel) != len(want.ByModel) {
		t.Errorf("groups: %d agents and %d models, want %d and %d", len(a.ByAgent), len(a.ByModel), len(want.ByAgent), len(want.ByModel))
	}
	for _, r := range reps {
		if r.Open() != 0 {
			t.Errorf("%d conversations still open", r.Open())
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*max(1, math.Abs(a), math.Abs(b)) }

// FOCUSGATE_HOLDOUT_MAX_OPEN bounds the team's open conversations, not
// each replica's: past it, the quietest is ended, by one replica.
func TestTeamOpenConversationsAreCapped(t *testing.T) {
	clk := &safeClock{now: time.Unix(2_000_000, 0)}
	reps := newReplicas(t, redistest.Shared(t), false, 2, clk, func(o *Options) { o.MaxOpen = 3 })
	// Each step is written before the next is sent, so that the order in
	// which the conversations began is the order Redis sees.
	for c := range 5 {
		for s := range 2 {
			r := reps[(c*2+s)%2]
			r.Record(r.Assign(focusgate.Request{API: focusgate.APIChat, Body: chatBody(c, "")}), focusgate.Step{Model: "gpt-4.1", Status: 200})
			r.Drain()
			clk.Add(time.Second)
		}
	}
	if n := reps[0].Open(); n != 3 {
		t.Errorf("%d conversations open across the team, want 3", n)
	}
	if c, s := counted(t, reps); c != 2 || s != 4 {
		t.Errorf("%v conversations (%v steps) ended for room, want the 2 quietest (4 steps)", c, s)
	}
}

// With Redis stopped mid-run, every step is still counted, by the replica
// that served it, and the dashboard says that its figures are per replica;
// once Redis is back, the team's figures return, with a note of the
// conversations counted apart meanwhile.
func TestRedisOutageCountsPerReplica(t *testing.T) {
	srv := redistest.Start(t)
	clk := &safeClock{now: time.Unix(3_000_000, 0)}
	reps := newReplicas(t, srv.URL(), false, 2, clk)
	converse(reps, 0, 4, 4, clk)
	endAll(reps, clk)
	if c, s := counted(t, reps); c != 4 || s != 16 {
		t.Fatalf("before the outage: %v conversations, %v steps; want 4 and 16", c, s)
	}

	srv.Stop()
	converse(reps, 4, 4, 4, clk)
	endAll(reps, clk)
	// Each replica served two steps of each conversation: it counts its
	// part.
	if c, s := counted(t, reps); c != 4+8 || s != 32 {
		t.Errorf("after the outage: %v conversations, %v steps; want 12 (4 whole, 8 halves) and 32", c, s)
	}
	// Each dashboard shows what its replica ended, whole conversations
	// before the outage (whichever replica ended each) and its parts
	// after.
	shown, shownSteps := 0, 0
	for i, r := range reps {
		if r.Shared() {
			t.Errorf("replica %d still believes Redis is up", i)
		}
		rep := r.report()
		if rep.Scope != focusgate.ScopeReplica || !strings.Contains(rep.Note, "per replica") {
			t.Errorf("replica %d: scope %q, note %q; want the figures said to be per replica", i, rep.Scope, rep.Note)
		}
		c, s := totals(rep)
		shown, shownSteps = shown+c, shownSteps+s
	}
	if shown != 12 || shownSteps != 32 {
		t.Errorf("the dashboards show %d conversations and %d steps between them, want 12 and 32", shown, shownSteps)
	}

	srv.Restart()
	for _, r := range reps {
		r.Probe()
		if !r.Shared() {
			t.Fatal("Redis is back, and a replica does not use it")
		}
	}
	converse(reps, 8, 2, 4, clk)
	endAll(reps, clk)
	rep := reps[1].report()
	if c, s := totals(rep); rep.Scope != focusgate.ScopeTeam || c != 2 || s != 8 {
		t.Errorf("after Redis came back: scope %q, %d conversations, %d steps; want the team's (a new server: 2 and 8)", rep.Scope, c, s)
	}
	if !strings.Contains(rep.Note, "4 conversations") {
		t.Errorf("note %q: want the 4 conversations counted apart", rep.Note)
	}
}

// blackHole accepts connections and never answers, as a Redis that hangs.
// Closing it drops them.
type blackHole struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newBlackHole(t *testing.T) *blackHole {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackHole{Listener: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, c)
			b.mu.Unlock()
		}
	}()
	return b
}

func (b *blackHole) drop() {
	b.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.conns {
		c.Close()
	}
}

// No step waits on Redis: with a Redis that never answers, and calls
// allowed an hour, recording ten thousand steps returns, and every step is
// counted once Redis is given up.
func TestRecordNeverWaitsOnRedis(t *testing.T) {
	hole := newBlackHole(t)
	s := &lockedSink{}
	h, err := NewShared(Options{Share: 0.5, Sinks: []Sink{s}}, RedisOptions{
		URL: "redis://" + hole.Addr().String(), Timeout: time.Hour, ProbeInterval: time.Hour,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	const steps = 10000
	for i := range steps {
		h.Record(h.Assign(focusgate.Request{API: focusgate.APIChat, Body: chatBody(i%50, "")}), focusgate.Step{Model: "gpt-4.1", Status: 200})
	}
	hole.drop()
	h.Flush()
	n := 0
	for _, c := range s.all() {
		n += c.Steps
	}
	if n != steps {
		t.Errorf("%d steps counted, want %d", n, steps)
	}
}

// scriptMidBatch makes the first pipeline of several commands meet a
// server that has just lost the step script and gets it back half-way
// through, as when another replica loads it while this one's batch runs:
// the first half is refused, the second taken.
type scriptMidBatch struct {
	other *redis.Client // the other replica's connection
	done  atomic.Bool
}

func (*scriptMidBatch) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*scriptMidBatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *scriptMidBatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) < 2 || !h.done.CompareAndSwap(false, true) {
			return next(ctx, cmds)
		}
		if err := h.other.ScriptFlush(ctx).Err(); err != nil {
			return err
		}
		half := len(cmds) / 2
		err := next(ctx, cmds[:half])
		if lerr := stepScript.Load(ctx, h.other).Err(); lerr != nil {
			return lerr
		}
		if err2 := next(ctx, cmds[half:]); err == nil {
			err = err2
		}
		return err
	}
}

// A step is added once even when the script reaches the server in the
// middle of its batch: only the steps the server refused are sent again.
func TestAStepIsAddedOnceWhenTheScriptArrivesMidBatch(t *testing.T) {
	srv := redistest.Start(t)
	clk := &safeClock{now: time.Unix(6_000_000, 0)}
	r := newReplicas(t, srv.URL(), false, 1, clk)[0]
	ropts, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	other := redis.NewClient(ropts)
	t.Cleanup(func() { other.Close() })
	hook := &scriptMidBatch{other: other}
	r.shared.client.AddHook(hook)

	tk := r.Assign(focusgate.Request{API: focusgate.APIChat, Body: chatBody(1, "")})
	const n = 6
	var steps []step
	for range n {
		steps = append(steps, step{id: tk.ID, arm: tk.Arm, model: "gpt-4.1", at: clk.Now(), f: figures{input: 100, priced: true}})
	}
	if failed := r.shared.add(steps); len(failed) != 0 || !hook.done.Load() {
		t.Fatalf("%d steps not taken (script lost mid-batch: %v)", len(failed), hook.done.Load())
	}
	got, err := other.HGet(t.Context(), r.shared.record(tk.ID), "n").Int()
	if err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Errorf("the conversation has %d steps in Redis, want %d", got, n)
	}
}

// What a replica keeps of a client's names, in Redis too, is cut: a 1 MB
// model name costs an open conversation a few dozen bytes.
func TestLongNamesAreCut(t *testing.T) {
	clk := &safeClock{now: time.Unix(4_000_000, 0)}
	reps := newReplicas(t, redistest.Shared(t), false, 1, clk)
	long := strings.Repeat("m", 1<<20)
	r := reps[0]
	r.Record(r.Assign(focusgate.Request{API: focusgate.APIChat, Body: chatBody(1, "")}), focusgate.Step{Model: long, Agent: long, Status: 200})
	endAll(reps, clk)
	ended := r.ended.all()
	if len(ended) != 1 {
		t.Fatalf("%d conversations ended, want 1", len(ended))
	}
	if c := ended[0]; len(c.Model) > focusgate.MaxNameBytes || len(c.Agent) > focusgate.MaxNameBytes || !strings.HasPrefix(c.Model, "mmmm") {
		t.Errorf("kept a model of %d bytes and an agent of %d; want at most %d", len(c.Model), len(c.Agent), focusgate.MaxNameBytes)
	}
}

// On a Redis Cluster, every key of a split lives in one slot, so that the
// scripts can touch them together: two replicas count conversations whole.
func TestReplicasShareTheirAccountingOnACluster(t *testing.T) {
	cluster := redistest.StartCluster(t, 3)
	clk := &safeClock{now: time.Unix(5_000_000, 0)}
	reps := newReplicas(t, cluster.URL(), true, 2, clk)
	converse(reps, 0, 6, 3, clk)
	endAll(reps, clk)
	if c, s := counted(t, reps); c != 6 || s != 18 {
		t.Errorf("%v conversations, %v steps; want 6 and 18", c, s)
	}
	if a, b := reps[0].report(), reps[1].report(); a.Scope != focusgate.ScopeTeam || !sameReport(t, a, b) {
		t.Errorf("the dashboards differ or are not the team's:\n%+v\n%+v", a, b)
	}
}

// sameReport compares two reports as the dashboard receives them.
func sameReport(t *testing.T, a, b focusgate.HoldoutReport) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}
