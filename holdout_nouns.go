package focusgate

import (
	"hash/crc32"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// The nouns of the holdout comparison (package holdout implements it): the
// gateway assigns each request to an arm and reports each step, and the
// dashboard shows the report.

// Arm is the side of the holdout comparison a conversation is on.
type Arm uint8

const (
	// PrunedArm is the usual arm: the conversation's pages are pruned.
	ArmPruned Arm = iota
	// HoldoutArm is the holdout: the conversation goes through whole, as
	// if focusgate only counted.
	ArmHoldout
)

// String is the arm's name in metrics, logs and the dashboard.
func (a Arm) String() string {
	if a == ArmHoldout {
		return "holdout"
	}
	return "pruned"
}

// ConversationID names a conversation by a keyed hash of its key: its text
// is never kept.
type ConversationID [16]byte

// Ticket is a request's conversation and arm. The zero Ticket (OK false)
// belongs to no conversation: the request is pruned as usual and not
// accounted for.
type Ticket struct {
	ID  ConversationID
	Arm Arm
	OK  bool
	// Model is the action model, to price the step: the one the request's
	// route names (Gemini and the clouds carry it in the path), else the
	// body's.
	Model string
}

// Step is one model call of a conversation, as the gateway saw it.
type Step struct {
	Model string // the action model named in the request
	Agent string // who sent it: the gateway key's name, else the client's user agent
	// Repeat says the newest page of the request is the same as the page
	// before it: the agent looked at an unchanged page again.
	Repeat bool
	// RetrieverUSD is what pruning this request cost (zero in the holdout
	// and on cache hits).
	RetrieverUSD float64
	// SentBytes is the size of the body sent upstream, which estimates its
	// input tokens when the upstream reports no usage.
	SentBytes int
	// Status is the upstream's HTTP status (or the gateway's, when no answer
	// came; StatusClientGone when the client went away first); 400 and
	// above counts as an upstream error, except StatusClientGone.
	Status int
	Usage  UpstreamUsage
}

// StatusClientGone is the status of a step whose client went away before
// the answer was whole (nginx's 499): the client's doing, no upstream error.
const StatusClientGone = 499

// UpstreamUsage is what the upstream reported a call cost, in tokens.
type UpstreamUsage struct {
	// Input is every input token, cached or not; CacheRead is the part
	// read from the provider's prompt cache.
	Input, CacheRead, Output int
	// Reported says the response carried a usage report.
	Reported bool
}

// HoldoutRecorder keeps a share of conversations whole and accounts for
// both arms; *holdout.Holdout is the implementation. Assign decides a
// request's arm before anything else is done to it, from its API, its body
// and the model its route names (Request.Model; the other fields are not
// read); Record is told how each step went, and must return at once: it is
// called on the request's path.
type HoldoutRecorder interface {
	Assign(req Request) Ticket
	Record(t Ticket, s Step)
}

// MaxNameBytes bounds a name a client chose (the model it asks for, its
// user agent) wherever focusgate keeps or logs it.
const MaxNameBytes = 64

// ClientName is a copy of name, a name a client chose, no longer than
// MaxNameBytes: a longer one keeps its first whole characters and a hash of
// all of it, so that two long names stay apart. What is kept per open
// conversation or written per log line then costs a few dozen bytes,
// however long the client's name, and the copy holds none of the request's
// memory (a 1 MB model name would otherwise stay alive with it).
func ClientName(name string) string {
	if len(name) <= MaxNameBytes {
		return strings.Clone(name)
	}
	// The name's bytes are only read: hashed where they are, without a
	// copy of a megabyte-long name.
	sum := crc32.ChecksumIEEE(unsafe.Slice(unsafe.StringData(name), len(name)))
	const mark, hexDigits = "…", "0123456789abcdef"
	cut := MaxNameBytes - len(mark) - 8
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	var b strings.Builder
	b.Grow(cut + len(mark) + 8)
	b.WriteString(name[:cut])
	b.WriteString(mark)
	for shift := 28; shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[sum>>uint(shift)&0xf])
	}
	return b.String()
}

// HoldoutReport is the comparison of the two arms, as the dashboard shows it
// and `focusgate eval --conversations` prints it.
type HoldoutReport struct {
	// Share is the configured holdout share.
	Share float64 `json:"share"`
	// Scope says whose conversations are compared: ScopeTeam, every
	// replica's, read from the Redis they share (FOCUSGATE_REDIS_URL), so
	// that every replica shows the same figures; or ScopeReplica, the
	// conversations this replica ended itself (no Redis, or Redis
	// unreachable).
	Scope string `json:"scope"`
	// Note says, when there is something to say, why the figures are not
	// what they would usually be: per replica while the team's Redis is
	// unreachable, or which conversations the team's figures leave out.
	Note string     `json:"note,omitempty"`
	Arms []ArmTotal `json:"arms"`
	// Metrics compare the arms over all conversations.
	Metrics []Comparison `json:"metrics"`
	// ByModel and ByAgent compare them per action model and per agent,
	// for those with enough conversations in each arm.
	ByModel []Group `json:"by_model"`
	ByAgent []Group `json:"by_agent"`
}

// The scopes of a HoldoutReport.
const (
	ScopeTeam    = "team"
	ScopeReplica = "replica"
)

// ArmTotal counts one arm's conversations and their steps.
type ArmTotal struct {
	Arm           string `json:"arm"`
	Conversations int    `json:"conversations"`
	Steps         int    `json:"steps"`
}

// Comparison is one figure in both arms: the mean per conversation of each,
// the difference pruned minus holdout with its 95% confidence interval, and
// what that says.
type Comparison struct {
	Name    string  `json:"name"`
	Label   string  `json:"label"`
	Pruned  float64 `json:"pruned"`
	Holdout float64 `json:"holdout"`
	// N is how many conversations each arm has of this figure.
	N [2]int `json:"n"`
	// Diff is Pruned − Holdout; Low and High bound it at 95% (Welch's
	// interval). Relative is Diff over Holdout, when Holdout is not zero.
	Diff     float64  `json:"diff"`
	Low      float64  `json:"low"`
	High     float64  `json:"high"`
	Relative *float64 `json:"relative,omitempty"`
	// Verdict is "lower" or "higher" (the pruned arm's figure, when the
	// interval excludes zero), "unclear", or "too few" (fewer than two
	// conversations in an arm).
	Verdict string `json:"verdict"`
	// More is, when the verdict is unclear, about how many more
	// conversations (both arms, at the current split) would make an
	// interval as narrow as the observed difference; -1 when it cannot be
	// told (no difference and no spread).
	More int `json:"more"`
}

// Group is the comparison of one model's or agent's conversations.
type Group struct {
	Name          string       `json:"name"`
	Conversations [2]int       `json:"conversations"`
	Metrics       []Comparison `json:"metrics"`
}

// HoldoutReporter reports the comparison of the arms as it stands;
// *holdout.Tally is the implementation.
type HoldoutReporter interface {
	Report() HoldoutReport
}

// Observer is told what focusgate did to each inspected request;
// *ui.Dashboard is the implementation. Observe is called on the request's
// path and must return at once.
type Observer interface {
	// Observe records out, the outcome of one request sent with the
	// gateway key named key ("" without gateway keys). The outcome refers
	// to the request's own memory: an observer copies what it keeps.
	Observe(key string, out Outcome)
}
