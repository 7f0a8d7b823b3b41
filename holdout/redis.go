package holdout

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/internal/redisconn"
)

// A team's replicas keep the holdout's accounting in the Redis they share,
// so that a conversation whose requests alternate between replicas is
// counted once, whole. Every key of one split (one holdout key and share)
// carries the same hash tag, so that on a Redis Cluster they live in one
// slot and a script can touch several of them at once:
//
//	focusgate:holdout:{<split>}:open    sorted set: open conversation id → time of its last step (unix ms)
//	focusgate:holdout:{<split>}:c:<id>  hash: one open conversation's arm, model, agent, first and last
//	                                    step, and counters (steps, tokens, errors, dollars, …)
//	focusgate:holdout:{<split>}:tally   hash: the ended conversations' sums, per arm, over all
//	                                    conversations and per model and agent ("kind|arm|figure|name")
//	focusgate:holdout:{<split>}:models  set: the model names the tally tells apart (at most maxGroups)
//	focusgate:holdout:{<split>}:agents  set: the agent names, likewise
//
// Each step is one script call that adds it to its conversation's hash and
// sets its time in the sorted set; the hash and the set expire twice
// Options.Idle after the last step. A replica that finds a conversation
// quiet for Options.Idle reads it and ends it with a second script, which
// removes it from the sorted set and adds it to the tally only if it is
// still there, still quiet and has not grown since it was read: of replicas
// racing to end it, exactly one does, and that one counts it in its metrics
// and log. Past Options.MaxOpen conversations in the sorted set, the
// quietest is ended the same way. The tally holds, per arm and group, the
// count, sum and sum of squares of each compared figure, from which every
// replica computes the same report with the same Welch intervals; it
// expires tallyTTL after the last conversation added to it.
//
// A split is named by a keyed hash of the holdout key and share, so that a
// new key or share starts a comparison of its own (conversations assigned
// under two splits are not one population) and the key cannot be read back.

// RedisOptions locate the Redis a team's replicas share their accounting
// in. Zero fields take the defaults documented on each.
type RedisOptions struct {
	// URL locates the server, e.g. redis://user:pass@host:6379/0
	// (rediss:// for TLS); the gateway's FOCUSGATE_REDIS_URL.
	URL string
	// Cluster says URL names a Redis Cluster: seed nodes as go-redis's
	// ParseClusterURL reads them, redis://host:7000?addr=host:7001.
	Cluster bool
	// Timeout bounds each call, dial and pooled-connection wait. Nothing
	// waits on these calls but the background writer, the sweeper and the
	// dashboard, so it can be longer than the cache's: a call that times
	// out because the gateway was short of CPU sends the replica back to
	// counting on its own for a while. Default 500ms.
	Timeout time.Duration
	// ProbeInterval is how often a Redis known to be unreachable is tried
	// again. Default 1s.
	ProbeInterval time.Duration
	// QueueSize bounds the steps waiting to be written; a step that finds
	// the queue full is accounted for on this replica. Default 4096.
	QueueSize int
	// Logger receives the moments Redis is lost and found again. Default
	// slog.Default().
	Logger *slog.Logger
}

// NewShared returns a Holdout whose accounting lives in the Redis that
// ropts names, shared by every replica with the same holdout key and share.
// It fails only for an invalid URL: a server that is down is tried again
// in the background, and meanwhile the replica counts what it serves. Call
// Flush when done.
func NewShared(opts Options, ropts RedisOptions) (*Holdout, error) {
	h := New(opts)
	if ropts.Timeout <= 0 {
		ropts.Timeout = 500 * time.Millisecond
	}
	if ropts.ProbeInterval <= 0 {
		ropts.ProbeInterval = time.Second
	}
	if ropts.QueueSize <= 0 {
		ropts.QueueSize = 4096
	}
	if ropts.Logger == nil {
		ropts.Logger = slog.Default()
	}
	client, err := redisconn.Open(ropts.URL, ropts.Cluster, ropts.Timeout, nil)
	if err != nil {
		// A url.Error quotes the whole URL, password included.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return nil, fmt.Errorf("holdout: invalid redis URL: %w", err)
	}
	s := &shared{
		h:       h,
		client:  client,
		keys:    keysFor(split(h.opts.Key, h.opts.Share)),
		timeout: ropts.Timeout,
		log:     ropts.Logger,
		queue:   make(chan step, ropts.QueueSize),
		closing: make(chan struct{}),
	}
	s.up.Store(true)
	h.shared = s
	s.wg.Add(2)
	go s.write()
	go s.probe(ropts.ProbeInterval)
	return h, nil
}

// split names the comparison a holdout key and share draw: a keyed hash, so
// that the name tells nothing of the key.
func split(key string, share float64) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte("focusgate holdout split " + strconv.FormatFloat(share, 'g', -1, 64)))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// keys are the Redis keys of one split.
type keys struct {
	open, tally, models, agents string
	record                      string // the prefix of a conversation's hash, before its id
}

func keysFor(split string) keys {
	p := "focusgate:holdout:{" + split + "}:"
	return keys{open: p + "open", tally: p + "tally", models: p + "models", agents: p + "agents", record: p + "c:"}
}

// tallyTTL is how long a split's tally outlives the last conversation
// added to it: a comparison nobody adds to for that long is forgotten, so
// that the splits of old keys and shares do not stay in Redis for ever.
const tallyTTL = 30 * 24 * time.Hour

// maxBatch bounds the steps written in one pipelined round trip.
const maxBatch = 128

// sweepBatch bounds the quiet conversations looked up at once.
const sweepBatch = 100

// shared is a Holdout's accounting in Redis.
type shared struct {
	h       *Holdout
	client  redis.UniversalClient
	keys    keys
	timeout time.Duration
	log     *slog.Logger

	// mu orders enqueue against stop, so that no step is queued after the
	// writer has written the last ones.
	mu      sync.RWMutex
	stopped bool
	queue   chan step

	up   atomic.Bool
	open atomic.Int64 // the team's open conversations, as the last step counted them

	closing chan struct{}
	wg      sync.WaitGroup
}

var (
	// stepScript adds one step to the conversation KEYS[2] and sets its
	// time in the sorted set KEYS[1] of open conversations, both expiring
	// ARGV[3] ms later, and returns how many conversations are open. The
	// first step to arrive also sets the arm, model and agent; the start
	// and end are the earliest and latest step, whatever order the
	// replicas' steps arrive in. ARGV: 1 id,
	// 2 time (ms), 3 ttl (ms), 4 arm, 5 model, 6 agent, 7 input tokens,
	// 8 cache reads, 9 output tokens, 10 estimated, 11 repeat, 12 error
	// (0 or 1 each), 13 dollars, 14 retriever dollars, 15 priced (0 or 1).
	stepScript = redis.NewScript(`
local rec = KEYS[2]
local at = tonumber(ARGV[2])
if redis.call("HSETNX", rec, "a", ARGV[4]) == 1 then
	redis.call("HSET", rec, "m", ARGV[5], "g", ARGV[6], "t0", ARGV[2], "t1", ARGV[2])
elseif at < tonumber(redis.call("HGET", rec, "t0")) then
	redis.call("HSET", rec, "t0", ARGV[2])
end
redis.call("HINCRBY", rec, "n", 1)
local counters = {"i", "r", "o", "e", "p", "x"}
for k, f in ipairs(counters) do
	if ARGV[6 + k] ~= "0" then
		redis.call("HINCRBY", rec, f, ARGV[6 + k])
	end
end
if ARGV[13] ~= "0" then
	redis.call("HINCRBYFLOAT", rec, "u", ARGV[13])
end
if ARGV[14] ~= "0" then
	redis.call("HINCRBYFLOAT", rec, "ru", ARGV[14])
end
if ARGV[15] == "0" then
	redis.call("HSET", rec, "np", "1")
end
if at > tonumber(redis.call("HGET", rec, "t1")) then
	redis.call("HSET", rec, "t1", ARGV[2])
end
redis.call("PEXPIRE", rec, ARGV[3])
local last = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not last or at > tonumber(last) then
	redis.call("ZADD", KEYS[1], at, ARGV[1])
end
redis.call("PEXPIRE", KEYS[1], ARGV[3])
return redis.call("ZCARD", KEYS[1])`)

	// endScript ends the conversation ARGV[1] (hash KEYS[2]) if it is still
	// open in KEYS[1], its last step no later than ARGV[2] ms, and it has
	// ARGV[3] steps, as the caller read it: it returns 1 and adds the
	// caller's sums (ARGV[9] on, field and increment pairs) to the tally
	// KEYS[3] under its arm ARGV[4], over all conversations and under its
	// model ARGV[5] and agent ARGV[6], each known in the set KEYS[4] or
	// KEYS[5] while there are fewer than ARGV[7], else summed as "other";
	// the tally and sets then expire ARGV[8] ms later. It returns 0 when the
	// conversation is no longer open or no longer quiet (another replica
	// ended it, or a step came), and -1 when it grew since it was read. A
	// conversation whose hash expired is only removed.
	endScript = redis.NewScript(`
local last = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not last or tonumber(last) > tonumber(ARGV[2]) then
	return 0
end
if (redis.call("HGET", KEYS[2], "n") or "0") ~= ARGV[3] then
	return -1
end
redis.call("ZREM", KEYS[1], ARGV[1])
redis.call("DEL", KEYS[2])
if ARGV[3] == "0" then
	return 0
end
local max = tonumber(ARGV[7])
local function group(set, name)
	if redis.call("SISMEMBER", set, name) == 1 then
		return name
	end
	if redis.call("SCARD", set) < max then
		redis.call("SADD", set, name)
		return name
	end
	return "other"
end
local groups = {{"all", ""}, {"model", group(KEYS[4], ARGV[5])}, {"agent", group(KEYS[5], ARGV[6])}}
for _, g in ipairs(groups) do
	for i = 9, #ARGV, 2 do
		redis.call("HINCRBYFLOAT", KEYS[3], g[1] .. "|" .. ARGV[4] .. "|" .. ARGV[i] .. "|" .. g[2], ARGV[i + 1])
	end
end
for k = 3, 5 do
	redis.call("PEXPIRE", KEYS[k], ARGV[8])
end
return 1`)
)

// enqueue hands a step to the writer, and says false when this replica
// must account for it itself: Redis is unreachable, the writer is that far
// behind, or the holdout has stopped.
func (s *shared) enqueue(st step) bool {
	if !s.up.Load() {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.stopped {
		return false
	}
	select {
	case s.queue <- st:
		return true
	default:
		return false
	}
}

// stop writes the steps still queued, then stops the writer and the probe
// and closes the connection.
func (s *shared) stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	s.mu.Unlock()
	close(s.closing)
	s.wg.Wait()
	_ = s.client.Close()
}

// write is the background writer: it sends the queued steps to Redis, as
// many as are waiting in one round trip, until the holdout stops.
func (s *shared) write() {
	defer s.wg.Done()
	batch := make([]step, 0, maxBatch)
	for {
		select {
		case st := <-s.queue:
			batch = append(batch[:0], st)
		case <-s.closing:
			for {
				batch = batch[:0]
			drain:
				for len(batch) < maxBatch {
					select {
					case st := <-s.queue:
						batch = append(batch, st)
					default:
						break drain
					}
				}
				if len(batch) == 0 {
					return
				}
				s.writeBatch(batch)
			}
		}
	fill:
		for len(batch) < maxBatch {
			select {
			case st := <-s.queue:
				batch = append(batch, st)
			default:
				break fill
			}
		}
		s.writeBatch(batch)
	}
}

// writeBatch adds a batch of steps to their conversations in Redis; the
// steps Redis did not take are accounted for on this replica. Marks in the
// batch are released once the rest is written.
func (s *shared) writeBatch(batch []step) {
	steps := make([]step, 0, len(batch))
	for _, st := range batch {
		if st.done == nil {
			steps = append(steps, st)
		}
	}
	if len(steps) > 0 {
		for _, st := range s.add(steps) {
			s.h.recordHere(st)
		}
	}
	for _, st := range batch {
		if st.done != nil {
			close(st.done)
		}
	}
}

// add sends steps to Redis in one pipelined round trip (two when Redis has
// lost the script), and returns those it did not take. A step whose call
// failed may have been taken all the same (a reply lost on its way back):
// counting it here as well is the lesser harm than losing it.
func (s *shared) add(steps []step) (failed []step) {
	if !s.up.Load() {
		return steps
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	ttl := (2 * s.h.opts.Idle).Milliseconds()
	send := func(todo []step) ([]*redis.Cmd, error) {
		pipe := s.client.Pipeline()
		cmds := make([]*redis.Cmd, len(todo))
		for i, st := range todo {
			f := st.f
			cmds[i] = stepScript.EvalSha(ctx, pipe, []string{s.keys.open, s.record(st.id)},
				idOf(st.id), st.at.UnixMilli(), ttl, st.arm.String(), st.model, st.agent,
				f.input, f.cacheRead, f.output, b2i(f.estimated), b2i(f.repeat), b2i(f.failed),
				f.usd, f.retrieverUSD, b2i(f.priced))
		}
		_, err := pipe.Exec(ctx)
		return cmds, err
	}
	cmds, err := send(steps)
	if err != nil {
		// A restarted or new server has not seen the script. Another
		// replica may load it while this pipeline runs, so some steps can
		// have been taken and others not: only those refused are sent again.
		var again []step
		var at []int
		for i, cmd := range cmds {
			if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
				again, at = append(again, steps[i]), append(at, i)
			}
		}
		if len(again) > 0 {
			if err = stepScript.Load(ctx, s.client).Err(); err == nil {
				var retried []*redis.Cmd
				retried, err = send(again)
				for j, i := range at {
					cmds[i] = retried[j]
				}
			}
		}
	}
	var open int64 = -1
	for i, cmd := range cmds {
		if cmd.Err() != nil {
			failed = append(failed, steps[i])
			continue
		}
		if n, ierr := cmd.Int64(); ierr == nil {
			open = n
		}
	}
	if err != nil {
		s.fail(err)
		return failed
	}
	if open >= 0 {
		if over := open - int64(s.h.opts.MaxOpen); over > 0 {
			open -= s.evict(over)
		}
		s.open.Store(open)
	}
	return failed
}

// evict ends the over quietest open conversations of the team, for room,
// and says how many it ended (another replica may have ended some first).
func (s *shared) evict(over int64) (ended int64) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	oldest, err := s.client.ZRangeWithScores(ctx, s.keys.open, 0, over-1).Result()
	cancel()
	if err != nil {
		s.fail(err)
		return 0
	}
	for _, z := range oldest {
		// Ended only if no step came meanwhile: then it is no longer the
		// quietest.
		ok, err := s.end(z.Member.(string), int64(z.Score))
		if err != nil {
			s.fail(err)
			return ended
		}
		if ok {
			ended++
		}
	}
	return ended
}

// isStopped says whether the holdout has stopped: the connection is
// closing, and its failures say nothing of Redis.
func (s *shared) isStopped() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.stopped
}

// sweep ends the team's conversations quiet for longer than Options.Idle
// at now.
func (s *shared) sweep(now time.Time) {
	if s.isStopped() {
		return
	}
	cutoff := now.Add(-s.h.opts.Idle).UnixMilli()
	for s.up.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		ids, err := s.client.ZRangeArgs(ctx, redis.ZRangeArgs{
			Key: s.keys.open, ByScore: true, Start: "-inf", Stop: strconv.FormatInt(cutoff, 10), Count: sweepBatch,
		}).Result()
		cancel()
		if err != nil {
			s.fail(err)
			return
		}
		ended := 0
		for _, id := range ids {
			ok, err := s.end(id, cutoff)
			if err != nil {
				s.fail(err)
				return
			}
			if ok {
				ended++
			}
		}
		// A conversation that could not be ended now (it kept changing
		// under the sweep) waits for the next one.
		if len(ids) < sweepBatch || ended < len(ids) {
			break
		}
	}
	if !s.up.Load() {
		return
	}
	// What remains open, for focusgate_conversations_open between steps.
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	n, err := s.client.ZCard(ctx, s.keys.open).Result()
	if err != nil {
		s.fail(err)
		return
	}
	s.open.Store(n)
}

// endAttempts bounds the reads of a conversation that keeps growing while
// it is being ended: a step came, from a replica whose clock or queue is
// behind.
const endAttempts = 3

// end ends the open conversation id if its last step is no later than
// cutoff (unix ms): it reads it, and has the end script count it, unless
// another replica ended it first or it moved on. It says whether this
// replica ended it; the sinks are then told.
func (s *shared) end(id string, cutoff int64) (bool, error) {
	for range endAttempts {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		rec, err := s.client.HGetAll(ctx, s.keys.record+id).Result()
		if err != nil {
			cancel()
			return false, err
		}
		c, steps := conversationOf(rec)
		args := []any{id, cutoff, steps, c.Arm.String(), groupName(c.Model), groupName(c.Agent), maxGroups, tallyTTL.Milliseconds()}
		if steps > 0 {
			args = append(args, sums(c)...)
		}
		res, err := endScript.Run(ctx, s.client, []string{s.keys.open, s.keys.record + id, s.keys.tally, s.keys.models, s.keys.agents}, args...).Int()
		cancel()
		switch {
		case err != nil:
			return false, err
		case res == 1:
			s.h.tell([]Conversation{c})
			return true, nil
		case res == 0:
			return false, nil
		}
	}
	return false, nil
}

// record is the key of a conversation's hash.
func (s *shared) record(id focusgate.ConversationID) string {
	return s.keys.record + idOf(id)
}

func idOf(id focusgate.ConversationID) string { return hex.EncodeToString(id[:]) }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// groupName is the name a conversation is grouped under: "unknown" when it
// has none, as the Tally does.
func groupName(name string) string {
	if name == "" {
		return "unknown"
	}
	return name
}

// conversationOf reads a conversation's hash, and how many steps it holds
// (0 when the hash expired).
func conversationOf(rec map[string]string) (Conversation, int) {
	num := func(f string) int {
		n, _ := strconv.Atoi(rec[f])
		return n
	}
	dollars := func(f string) float64 {
		x, _ := strconv.ParseFloat(rec[f], 64)
		return x
	}
	c := Conversation{
		Model: rec["m"], Agent: rec["g"],
		Steps: num("n"), InputTokens: num("i"), CacheReadTokens: num("r"), OutputTokens: num("o"),
		EstimatedSteps: num("e"), RepeatSteps: num("p"), Errors: num("x"),
		USD: dollars("u"), RetrieverUSD: dollars("ru"), Priced: rec["np"] != "1",
		Start: time.UnixMilli(int64(num("t0"))), End: time.UnixMilli(int64(num("t1"))),
	}
	c.Arm, _ = parseArm(rec["a"])
	return c, c.Steps
}

// sums are what a conversation adds to its arm's tally, as field and
// increment pairs: one conversation, its steps, and for each figure it has,
// one value, the value, and its square.
func sums(c Conversation) []any {
	out := []any{"c", 1, "steps", c.Steps}
	v, ok := values(c)
	for i := range v {
		if ok[i] {
			name := metricInfo[i].name
			out = append(out, name+".n", 1, name+".s", v[i], name+".q", v[i]*v[i])
		}
	}
	return out
}

// report reads the team's tally and compares its arms, as every replica
// does from the same figures.
func (s *shared) report(share float64) (focusgate.HoldoutReport, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	fields, err := s.client.HGetAll(ctx, s.keys.tally).Result()
	if err != nil {
		return focusgate.HoldoutReport{}, fmt.Errorf("holdout: reading the team's tally: %w", err)
	}
	var all armSums
	groups := [2]map[string]*armSums{{}, {}}
	for f, v := range fields {
		parts := strings.SplitN(f, "|", 4)
		if len(parts) != 4 {
			continue
		}
		arm, err := parseArm(parts[1])
		x, perr := strconv.ParseFloat(v, 64)
		if err != nil || perr != nil {
			continue
		}
		var to *armSums
		switch parts[0] {
		case "all":
			to = &all
		case "model", "agent":
			g := groups[0]
			if parts[0] == "agent" {
				g = groups[1]
			}
			if to = g[parts[3]]; to == nil {
				to = &armSums{}
				g[parts[3]] = to
			}
		default:
			continue
		}
		to[arm].set(parts[2], x)
	}
	pairs := [2]map[string]*pair{{}, {}}
	for kind, g := range groups {
		for name, a := range g {
			p := a.pair()
			pairs[kind][name] = &p
		}
	}
	r := buildReport(share, all.pair(), pairs)
	r.Scope = focusgate.ScopeTeam
	return r, nil
}

// armSums are the tally's sums for both arms of one group.
type armSums [2]figureSums

func (a armSums) pair() pair {
	var p pair
	for i, f := range a {
		p[i] = f.arm()
	}
	return p
}

// figureSums are one arm's sums: conversations, steps, and per figure the
// count, sum and sum of squares.
type figureSums struct {
	conversations, steps float64
	n, sum, squares      [numMetrics]float64
}

func (f *figureSums) set(field string, x float64) {
	switch field {
	case "c":
		f.conversations = x
		return
	case "steps":
		f.steps = x
		return
	}
	name, kind, ok := strings.Cut(field, ".")
	if !ok {
		return
	}
	for i, m := range metricInfo {
		if m.name != name {
			continue
		}
		switch kind {
		case "n":
			f.n[i] = x
		case "s":
			f.sum[i] = x
		case "q":
			f.squares[i] = x
		}
	}
}

func (f figureSums) arm() arm {
	a := arm{conversations: int(f.conversations), steps: int(f.steps)}
	for i := range a.metrics {
		a.metrics[i] = statOfSums(f.n[i], f.sum[i], f.squares[i])
	}
	return a
}

// fail marks Redis unreachable for err, unless the caller gave up or the
// holdout is stopping: until the probe finds it again, this replica counts
// what it serves.
func (s *shared) fail(err error) {
	if errors.Is(err, context.Canceled) || s.isStopped() {
		return
	}
	if s.up.Swap(false) {
		s.log.Warn("holdout: Redis unreachable; this replica counts the conversations it serves until it answers again, and its dashboard shows them (figures per replica)",
			"err", err)
	}
}

// probe tries an unreachable Redis again every interval, on the node that
// holds the split's keys, until the holdout stops.
func (s *shared) probe(interval time.Duration) {
	defer s.wg.Done()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-s.closing:
			return
		case <-tick.C:
			if !s.up.Load() {
				s.ping()
			}
		}
	}
}

// ping looks for the split's tally, which leads a cluster client to the
// node that holds every key of the split, and marks Redis reachable when
// it answers.
func (s *shared) ping() {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	if err := s.client.Exists(ctx, s.keys.tally).Err(); err != nil {
		return
	}
	if !s.up.Swap(true) {
		s.log.Info("holdout: Redis reachable again; the team's accounting resumes")
	}
}

// Reporter is what the dashboard shows of the holdout: without Redis,
// local, the tally of the conversations this replica ended; with Redis, the
// team's comparison read from it, or local with a note saying the figures
// are per replica while Redis is unreachable.
func (h *Holdout) Reporter(local *Tally) focusgate.HoldoutReporter {
	if h.shared == nil {
		return local
	}
	return teamReporter{h: h, local: local}
}

type teamReporter struct {
	h     *Holdout
	local *Tally
}

// Report compares the arms as the team's tally stands, or as this
// replica's does while Redis is unreachable.
func (t teamReporter) Report() focusgate.HoldoutReport {
	s := t.h.shared
	if s.up.Load() {
		r, err := s.report(t.h.opts.Share)
		if err == nil {
			if n := t.h.apart.Load(); n > 0 {
				r.Note = fmt.Sprintf("%d conversations this replica ended while Redis was unreachable were counted per replica, and are not in these figures.", n)
			}
			return r
		}
		s.fail(err)
	}
	r := t.local.Report()
	r.Note = "Figures are per replica: the team's Redis is unreachable, so this replica counts the conversations it serves and shows those it ended itself; a conversation whose requests alternate between replicas is counted in parts, on each."
	return r
}
