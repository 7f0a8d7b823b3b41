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
	"time"

	"github.com/tidwall/gjson"

	"github.com/focusgate/focusgate"
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
	// Sinks are told about every conversation that ends.
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
}

// New returns a Holdout.
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
// so that every replica with the same key decides the same.
func (h *Holdout) Assign(req focusgate.Request) focusgate.Ticket {
	key, ok := conversationKey(req.API, req.Body)
	if !ok {
		return focusgate.Ticket{}
	}
	m := hmac.New(sha256.New, h.mac)
	m.Write([]byte(key))
	sum := m.Sum(nil)
	// A model the route names (Gemini's path) is the model; the body's
	// "model" member is read only when there is none.
	model := req.Model
	if model == "" {
		model = gjson.GetBytes(req.Body, "model").String()
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

// Record accounts for one step of the conversation t names. Conversations
// that have gone quiet meanwhile are ended first.
func (h *Holdout) Record(t focusgate.Ticket, s focusgate.Step) {
	if !t.OK {
		return
	}
	now := h.opts.Now()
	var ended []Conversation
	h.mu.Lock()
	ended = h.sweepLocked(now, ended)
	e, ok := h.open[t.ID]
	if !ok {
		if h.order.Len() >= h.opts.MaxOpen {
			ended = append(ended, h.closeLocked(h.order.Front()))
		}
		// The model is priced by its whole name at every step; what is
		// kept of the names is a cut copy, not the request's memory.
		oc := &openConversation{id: t.ID, Conversation: Conversation{Arm: t.Arm,
			Model: focusgate.ClientName(s.Model), Agent: focusgate.ClientName(s.Agent), Priced: true, Start: now}}
		e = h.order.PushBack(oc)
		h.open[t.ID] = e
	} else {
		h.order.MoveToBack(e)
	}
	oc := e.Value.(*openConversation)
	oc.add(s, now, h.opts.Prices)
	h.mu.Unlock()
	h.tell(ended)
}

// Sweep ends the conversations quiet for longer than Options.Idle.
func (h *Holdout) Sweep() {
	h.mu.Lock()
	ended := h.sweepLocked(h.opts.Now(), nil)
	h.mu.Unlock()
	h.tell(ended)
}

// Flush ends every open conversation, as the gateway stops: their figures
// would otherwise be lost.
func (h *Holdout) Flush() {
	var ended []Conversation
	h.mu.Lock()
	for h.order.Len() > 0 {
		ended = append(ended, h.closeLocked(h.order.Front()))
	}
	h.mu.Unlock()
	h.tell(ended)
}

// Open says how many conversations are being accounted for.
func (h *Holdout) Open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.order.Len()
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

func (c *Conversation) add(s focusgate.Step, now time.Time, prices *pricing.Table) {
	c.Steps++
	c.End = now
	u := s.Usage
	if !u.Reported {
		u = focusgate.UpstreamUsage{Input: s.SentBytes / bytesPerToken}
		c.EstimatedSteps++
	}
	c.InputTokens += u.Input
	c.CacheReadTokens += u.CacheRead
	c.OutputTokens += u.Output
	if s.Repeat {
		c.RepeatSteps++
	}
	if s.Status == 0 || s.Status >= 400 && s.Status != focusgate.StatusClientGone {
		c.Errors++
	}
	c.RetrieverUSD += s.RetrieverUSD
	if p, ok := prices.Lookup(s.Model); ok {
		c.USD += p.Cost(u.Input, u.Output) + s.RetrieverUSD
	} else {
		c.Priced = false
	}
}

var _ focusgate.HoldoutRecorder = (*Holdout)(nil)
