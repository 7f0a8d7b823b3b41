// Package holdout keeps a small share of conversations whole, so that a team
// can compare on its own traffic what a conversation costs and how long it
// runs with pruning and without.
//
// Each request is put in an arm by its conversation: a keyed hash of the
// text that stays the same throughout the conversation (see key.go) decides,
// so every request of a conversation lands in the same arm, on every replica,
// without anything shared or stored. A conversation is accounted for in
// counters only (steps, tokens, dollars, errors) while it is open, and
// counts once it has gone quiet for a set time; then its figures go to the
// Sinks (Prometheus, the dashboard's Report, a log line that `focusgate eval`
// reads back) and nothing of it is kept.
//
// A team whose replicas share a Redis keeps those counters there (see
// redis.go), so that a conversation whose requests alternate between
// replicas is one conversation, ended and counted by one replica, and every
// replica's dashboard shows the team's comparison. The arm never depends on
// Redis, and no request waits on it: steps are written in the background,
// and while Redis is unreachable each replica counts what it serves.
package holdout

import (
	"container/list"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/pricing"
)

// Arms lists the arms, in the order the dashboard shows them.
var Arms = []focusgate.Arm{focusgate.ArmPruned, focusgate.ArmHoldout}

// parseArm reads an arm's name, as String writes it.
func parseArm(s string) (focusgate.Arm, error) {
	for _, a := range Arms {
		if s == a.String() {
			return a, nil
		}
	}
	return 0, fmt.Errorf("holdout: unknown arm %q", s)
}

// DefaultKey keys the hash that assigns arms when no key is configured: a
// constant, so that replicas agree with no setting at all. A team sets a key
// of its own to draw a fresh split, or to keep the split unpredictable to
// clients.
const DefaultKey = "focusgate-holdout-v1"

// Options configure a Holdout.
type Options struct {
	// Share is the fraction of conversations held out, from 0 to 1.
	Share float64
	// Key keys the hash of conversation keys; every replica must have the
	// same. Empty means DefaultKey.
	Key string
	// Idle is how long a conversation may go without a request before it
	// counts as ended. Default 10 minutes.
	Idle time.Duration
	// MaxOpen caps the conversations accounted for at once; past it, the one
	// quiet the longest counts as ended. Default 100000.
	MaxOpen int
	// Prices turn tokens into dollars; nil uses the built-in table.
	Prices *pricing.Table
	// Sinks are told about every conversation this replica ends: with
	// Redis, each conversation of the team is ended by one replica, whose
	// sinks alone are told.
	Sinks []Sink
	// Now is the clock; nil is time.Now. Tests set their own.
	Now func() time.Time
}

// Sink receives the figures of each conversation that ended. End is called
// outside the Holdout's lock and must return quickly.
type Sink interface {
	End(c Conversation)
}

// Holdout assigns conversations to arms and accounts for them. It is safe for
// concurrent use.
type Holdout struct {
	opts Options
	// threshold is Share scaled to the hash's 64 bits: a conversation whose
	// hash is below it is held out.
	threshold uint64
	mac       []byte

	mu    sync.Mutex
	open  map[focusgate.ConversationID]*list.Element // of *openConversation
	order *list.List                                 // least recently seen first

	// shared keeps the accounting in the team's Redis; nil when each
	// replica accounts for what it serves (see NewShared).
	shared *shared
	// apart counts the conversations this replica ended on its own while
	// its accounting was meant to be shared: Redis was unreachable, and the
	// team's figures leave them out.
	apart atomic.Int64
}

// New returns a Holdout that accounts, in this process, for the steps it
// is told about.
func New(opts Options) *Holdout {
	if opts.Key == "" {
		opts.Key = DefaultKey
	}
	if opts.Idle <= 0 {
		opts.Idle = 10 * time.Minute
	}
	if opts.MaxOpen <= 0 {
		opts.MaxOpen = 100000
	}
	if opts.Prices == nil {
		opts.Prices = pricing.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	h := &Holdout{opts: opts, mac: []byte(opts.Key), open: map[focusgate.ConversationID]*list.Element{}, order: list.New()}
	switch share := opts.Share; {
	case share >= 1:
		h.threshold = math.MaxUint64
	case share > 0:
		h.threshold = uint64(share * (1 << 64))
	}
	return h
}

// Assign says which conversation a request belongs to, and in which arm it
// is. It reads only the request's API, body and route model, and the key,
// so that every replica with the same key decides the same, whether or not
// Redis answers.
func (h *Holdout) Assign(req focusgate.Request) focusgate.Ticket {
	key, ok := conversationKey(req.API, req.Body)
	if !ok {
		return focusgate.Ticket{}
	}
	m := hmac.New(sha256.New, h.mac)
	m.Write([]byte(key))
	sum := m.Sum(nil)
	// A model the route names (Gemini's path) is the model; the body's
	// "model" member is read only when there is none, and only among its
	// leading members: the pipeline's outcome names the model the upstream
	// reads, which the step takes instead (see proxy's recordStep).
	model := req.Model
	if model == "" {
		model = detect.LeadingModel(req.Body)
	}
	t := focusgate.Ticket{OK: true, Model: model}
	copy(t.ID[:], sum)
	if binary.BigEndian.Uint64(sum[16:24]) < h.threshold {
		t.Arm = focusgate.ArmHoldout
	}
	return t
}

// bytesPerToken estimates input tokens from bytes when the upstream reports
// none: about four bytes a token for English text and JSON.
const bytesPerToken = 4

// step is one step as the holdout keeps it: its conversation, the names
// for the breakdowns (cut copies: see focusgate.ClientName), its figures
// and when it was taken. A step with done set carries nothing: it marks a
// place in the queue to Redis, and done is closed once everything queued
// before it has been written.
type step struct {
	id           focusgate.ConversationID
	arm          focusgate.Arm
	model, agent string
	at           time.Time
	f            figures
	done         chan struct{}
}

// Record accounts for one step of the conversation t names. It returns at
// once: with Redis, the step is handed to a background writer; without it,
// or while Redis is unreachable, or when the writer is that far behind, the
// step is accounted for here.
func (h *Holdout) Record(t focusgate.Ticket, s focusgate.Step) {
	if !t.OK {
		return
	}
	st := step{
		id: t.ID, arm: t.Arm,
		// The model is priced by its whole name; what is kept of the
		// names is a cut copy.
		model: focusgate.ClientName(s.Model), agent: focusgate.ClientName(s.Agent),
		at: h.opts.Now(), f: figuresOf(s, h.opts.Prices),
	}
	if h.shared != nil && h.shared.enqueue(st) {
		return
	}
	h.recordHere(st)
}

// recordHere accounts for a step in this process. Conversations that have
// gone quiet meanwhile are ended first.
func (h *Holdout) recordHere(st step) {
	var ended []Conversation
	h.mu.Lock()
	ended = h.sweepLocked(h.opts.Now(), ended)
	e, ok := h.open[st.id]
	if !ok {
		if h.order.Len() >= h.opts.MaxOpen {
			ended = append(ended, h.closeLocked(h.order.Front()))
		}
		oc := &openConversation{id: st.id, Conversation: Conversation{Arm: st.arm, Model: st.model, Agent: st.agent, Priced: true, Start: st.at}}
		e = h.order.PushBack(oc)
		h.open[st.id] = e
	} else {
		h.order.MoveToBack(e)
	}
	e.Value.(*openConversation).add(st.f, st.at)
	h.mu.Unlock()
	h.endHere(ended)
}

// Sweep ends the conversations quiet for longer than Options.Idle: this
// replica's own, and with Redis the team's, each by one replica.
func (h *Holdout) Sweep() {
	now := h.opts.Now()
	h.mu.Lock()
	ended := h.sweepLocked(now, nil)
	h.mu.Unlock()
	h.endHere(ended)
	if h.shared != nil {
		h.shared.sweep(now)
	}
}

// Flush ends every conversation this replica accounts for itself, as the
// gateway stops: their figures would otherwise be lost. With Redis, it
// first writes the steps still queued and closes the connection; the
// team's open conversations are left to the other replicas, which end them
// once they go quiet (or the next replica to start, within
// Options.Idle).
func (h *Holdout) Flush() {
	if h.shared != nil {
		h.shared.stop()
	}
	var ended []Conversation
	h.mu.Lock()
	for h.order.Len() > 0 {
		ended = append(ended, h.closeLocked(h.order.Front()))
	}
	h.mu.Unlock()
	h.endHere(ended)
}

// Open says how many conversations are being accounted for: the team's,
// as Redis last counted them, while the accounting is shared; else this
// replica's own.
func (h *Holdout) Open() int {
	if h.shared != nil && h.shared.up.Load() {
		return int(h.shared.open.Load())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.order.Len()
}

// Shared says whether the accounting is the team's, in Redis, at the
// moment: false without Redis, and while it is unreachable.
func (h *Holdout) Shared() bool {
	return h.shared != nil && h.shared.up.Load()
}

// Run sweeps every tenth of Options.Idle (at least every minute, at most
// ten times a second) until ctx ends, so that conversations count once they
// go quiet even when no request comes.
func (h *Holdout) Run(ctx context.Context) {
	t := time.NewTicker(min(max(h.opts.Idle/10, 100*time.Millisecond), time.Minute))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.Sweep()
		}
	}
}

func (h *Holdout) sweepLocked(now time.Time, ended []Conversation) []Conversation {
	for e := h.order.Front(); e != nil; e = h.order.Front() {
		if now.Sub(e.Value.(*openConversation).End) < h.opts.Idle {
			break
		}
		ended = append(ended, h.closeLocked(e))
	}
	return ended
}

func (h *Holdout) closeLocked(e *list.Element) Conversation {
	oc := h.order.Remove(e).(*openConversation)
	delete(h.open, oc.id)
	return oc.Conversation
}

// endHere tells the sinks about conversations this replica ended on its
// own, and counts them apart when they should have been the team's.
func (h *Holdout) endHere(ended []Conversation) {
	if h.shared != nil {
		h.apart.Add(int64(len(ended)))
	}
	h.tell(ended)
}

func (h *Holdout) tell(ended []Conversation) {
	for _, c := range ended {
		for _, s := range h.opts.Sinks {
			s.End(c)
		}
	}
}

type openConversation struct {
	id focusgate.ConversationID
	Conversation
}

// Conversation is the figures of one conversation: counters, and the names
// of its model and agent for the breakdowns. Nothing of its content.
type Conversation struct {
	Arm   focusgate.Arm
	Model string // of its first step
	Agent string // of its first step
	Steps int
	// InputTokens are the tokens the action model read, cached or not, as
	// the upstream reported them; for steps without a report, estimated
	// from the bytes sent (EstimatedSteps counts those).
	InputTokens     int
	CacheReadTokens int
	OutputTokens    int
	EstimatedSteps  int
	RepeatSteps     int // steps whose newest page repeated the page before it
	Errors          int // steps the upstream answered with 400 or above, or not at all
	// USD is what the conversation cost at list prices: the action model's
	// input and output, and the retriever's. Priced says every step's model
	// had a price; otherwise USD is not comparable and is left out.
	USD          float64
	RetrieverUSD float64
	Priced       bool
	Start, End   time.Time
}

// figures are what one step adds to its conversation.
type figures struct {
	input, cacheRead, output  int
	estimated, repeat, failed bool
	priced                    bool
	usd, retrieverUSD         float64
}

// maxPricedName bounds the model names the holdout looks up prices for.
const maxPricedName = 256

// figuresOf reads a step's figures: tokens as the upstream reported them,
// else estimated from the bytes sent; dollars at the list price of its
// model, read by its whole name.
func figuresOf(s focusgate.Step, prices *pricing.Table) figures {
	u := s.Usage
	f := figures{repeat: s.Repeat, retrieverUSD: s.RetrieverUSD,
		failed: s.Status == 0 || s.Status >= 400 && s.Status != focusgate.StatusClientGone}
	if !u.Reported {
		u = focusgate.UpstreamUsage{Input: s.SentBytes / bytesPerToken}
		f.estimated = true
	}
	f.input, f.cacheRead, f.output = u.Input, u.CacheRead, u.Output
	// No priced model has a name that long, and looking one up costs time
	// that grows faster than its length: a client's megabyte-long name is
	// simply unpriced.
	if len(s.Model) <= maxPricedName {
		if p, ok := prices.Lookup(s.Model); ok {
			f.priced = true
			f.usd = p.Cost(u.Input, u.Output) + s.RetrieverUSD
		}
	}
	return f
}

func (c *Conversation) add(f figures, at time.Time) {
	c.Steps++
	if at.After(c.End) {
		c.End = at
	}
	c.InputTokens += f.input
	c.CacheReadTokens += f.cacheRead
	c.OutputTokens += f.output
	if f.estimated {
		c.EstimatedSteps++
	}
	if f.repeat {
		c.RepeatSteps++
	}
	if f.failed {
		c.Errors++
	}
	c.RetrieverUSD += f.retrieverUSD
	if f.priced {
		c.USD += f.usd
	} else {
		c.Priced = false
	}
}

var _ focusgate.HoldoutRecorder = (*Holdout)(nil)
