// Package focusgate declares the names that several of focusgate's packages
// share: the providers whose APIs it speaks (provider_*.go, one declaration
// each) and the API of each body shape, the line of a page tree, the
// post-processing modes and retriever prompt variants, what became of a
// request (status and reason), the model families it tells apart, and what
// is known of a page's text once worked out (known.go). Each
// is declared here once, so that detection, pruning, the pipeline, the
// gateway, the dashboard and the metrics speak of the same thing by the same
// name.
//
// It also holds the domain's nouns and the small service interfaces the
// gateway (package proxy) and the dashboard (package ui) are written in, so
// that they import nothing else of the project (outcome.go,
// holdout_nouns.go): a Request and the Outcome the pipeline makes of it, with
// flat Page summaries, the cache outcome, line Ranges, the holdout's Ticket,
// Step and report, and the Rewriter, HoldoutRecorder, HoldoutReporter and
// Observer interfaces, which the pipeline, the holdout and the dashboard
// implement and cmd/focusgate wires.
//
// The package holds no behaviour beyond parsing these values, keeping what is
// known of a page, describing an outcome for a log line, summing the outcomes
// of a rescue's two attempts, and reading the providers' declarations
// (matching a request to its route, finding a credential, writing an error in
// a provider's shape), and imports nothing of the project's own.
package focusgate

import (
	"fmt"
	"strings"
)

// Line is one element of a page tree, as detection finds it and pruning
// writes it back. A page is its tree as the tool printed it: whatever a
// client wrapped around it (a file read's line numbers, JSON escaping) is
// detection's to peel and to put back, so pruning and the retriever never
// see it.
type Line struct {
	// Start and End are byte offsets in the tree's text. Start is where the
	// line begins, indentation included; End excludes the final '\n'. A line
	// may span continuation lines (a name with a newline in it).
	Start, End int
	Depth      int    // nesting level, 0 for the root
	BID        string // element id as the agent uses it in actions ("a212", "1744", "e12"); empty when none
	Role       string // "link", "StaticText", "button", ...; empty when none
}

// Piece is a run of a page's lines as pruning writes the page back: lines
// From to To-1 (indexes into the page's Lines) kept as they came, or a line
// of Text in their place. The pieces of a page cover its lines in order;
// between two pieces goes what separated their lines in the page (a line
// break). Detection writes the pieces back through the page's wrappers,
// kept lines as the client's own bytes.
type Piece struct {
	Kind     PieceKind
	From, To int
	Text     string // the stub or the marker; empty for kept lines
}

// PieceKind says what a Piece is.
type PieceKind uint8

// The kinds of Piece.
const (
	// PieceKept is lines kept as they came, with what separates them.
	PieceKept PieceKind = iota
	// PieceStub is the stand-in of one element (To is From+1). It keeps
	// what precedes the element on its line in the page's wrappers, such as
	// a file read's line number.
	PieceStub
	// PieceMarker stands for the lines it replaces, and keeps nothing of
	// them.
	PieceMarker
)

// Mode says how the lines the retriever did not choose are written back.
type Mode string

// The post-processing modes; see the README, "How pruning works".
const (
	ModeRemove    Mode = "remove"
	ModeAncestors Mode = "ancestors"
	ModeStubs     Mode = "stubs"
	ModeOff       Mode = "off"
)

// Modes lists the modes a setting or header may name.
var Modes = []Mode{ModeRemove, ModeAncestors, ModeStubs, ModeOff}

// ParseMode reads a mode from configuration, a flag or a request header, all
// the same way: case and surrounding space are ignored, and an empty value
// means the default, ModeRemove, so that an unset variable or header behaves like
// an absent one.
func ParseMode(s string) (Mode, error) {
	return parseName(s, Modes, ModeRemove, "mode")
}

// UnmarshalText reads a mode with ParseMode, for settings and flags.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	if err == nil {
		*m = v
	}
	return err
}

// Variant names the instructions given to the retriever.
type Variant string

// The prompt variants; see prune/retriever.go for what each asks.
const (
	VariantLine        Variant = "line"
	VariantRestrictive Variant = "restrictive"
	VariantNeutral     Variant = "neutral"
	VariantDefender    Variant = "defender"
)

// Variants lists the prompt variants a setting or header may name.
var Variants = []Variant{VariantLine, VariantRestrictive, VariantNeutral, VariantDefender}

// ParseVariant reads a prompt variant the way ParseMode reads a mode; an
// empty value means VariantLine.
func ParseVariant(s string) (Variant, error) {
	return parseName(s, Variants, VariantLine, "prompt variant")
}

// UnmarshalText reads a variant with ParseVariant, for settings and flags.
func (v *Variant) UnmarshalText(b []byte) error {
	p, err := ParseVariant(string(b))
	if err == nil {
		*v = p
	}
	return err
}

func parseName[T ~string](s string, names []T, empty T, what string) (T, error) {
	v := T(strings.ToLower(strings.TrimSpace(s)))
	if v == "" {
		return empty, nil
	}
	for _, n := range names {
		if v == n {
			return v, nil
		}
	}
	want := make([]string, len(names))
	for i, n := range names {
		want[i] = string(n)
	}
	return "", fmt.Errorf("unknown %s %q (want %s)", what, s, strings.Join(want, ", "))
}

// Status says what focusgate did to an observation or a request.
type Status string

const (
	StatusPruned     Status = "pruned"      // sent pruned
	StatusSkipped    Status = "skipped"     // pruning was not attempted or did not pay
	StatusFailedOpen Status = "failed-open" // something failed; the original went out
)

// Reason says why an observation or a request was not pruned. Reasons are
// short, stable and few, for use as metric labels; each is documented in the
// README ("Reasons for skipped", "Failing open").
type Reason string

// Reasons for StatusSkipped.
const (
	ReasonNoObservation  Reason = "no-observation"   // the body holds no page
	ReasonNoGoal         Reason = "no-goal"          // the body says nothing of what the agent is after: a lone tool output, as Claude Code sends to count_tokens
	ReasonBelowMinTokens Reason = "below-min-tokens" // the page is smaller than FOCUSGATE_MIN_TOKENS
	ReasonModeOff        Reason = "mode-off"         // the mode is off
	ReasonNoGain         Reason = "no-gain"          // the pruned page was not smaller
	ReasonUneconomic     Reason = "uneconomic"       // the retriever costs more than pruning can save
	ReasonNotJSON        Reason = "not-json"         // the body is not a JSON object (a malformed object without element ids is no-observation: detect.MayHoldPage)
	ReasonUndecodable    Reason = "undecodable-body" // the body's Content-Encoding could not be decoded
	ReasonBadHeader      Reason = "bad-header"       // an unknown X-Focusgate-Mode or X-Focusgate-Prompt
	ReasonBusy           Reason = "busy"             // the inspection budget was full
	ReasonNotCached      Reason = "not-cached"       // an older page with no stored selection, left as it came
	ReasonRelook         Reason = "re-look"          // the agent looked at the page it was just shown pruned again: sent whole
	ReasonBypassModel    Reason = "bypass-model"     // the action model matches FOCUSGATE_BYPASS_MODELS
	ReasonRetrieverLimit Reason = "retriever-limit"  // the request had made FOCUSGATE_RETRIEVER_MAX_CALLS retriever calls: later pages go out whole (as stubs in a rescue)
	ReasonClientSigned   Reason = "client-signed"    // the client signed the request itself (AWS SigV4) and the gateway has no credentials to sign it again: sent byte for byte
	ReasonHoldout        Reason = "holdout"          // the conversation is in the holdout (FOCUSGATE_HOLDOUT): sent whole from its first request to its last, for comparison
)

// Reasons for StatusFailedOpen; ReasonShutdown also skips requests that arrive while
// the gateway stops.
const (
	ReasonTimeout          Reason = "timeout"            // past the request's deadline
	ReasonCanceled         Reason = "canceled"           // the client went away
	ReasonShutdown         Reason = "shutdown"           // the gateway is shutting down
	ReasonRetrieverError   Reason = "retriever-error"    // the retriever could not be reached
	ReasonRetrieverHTTP4xx Reason = "retriever-http-4xx" // the retriever refused the call
	ReasonRetrieverHTTP5xx Reason = "retriever-http-5xx" // the retriever failed
	ReasonBadAnswer        Reason = "bad-answer"         // the retriever's answer named no usable lines, twice
	ReasonBadInput         Reason = "bad-input"          // an unknown mode or variant reached the pruner
	ReasonPostprocessError Reason = "postprocess-error"  // the selection could not be applied to the tree
	ReasonCacheError       Reason = "cache-error"        // a stored selection could not be read
	ReasonInternalError    Reason = "internal-error"     // a bug, recovered from
)

// Rescue says what focusgate did for a request that did not fit its action
// model's context window: it sent it with every page of the conversation
// pruned, and the upstream took it (RescueRescued) or refused it again
// (RescueStillTooLong, the client then gets the first refusal), or there was no
// page left to prune (RescueNothingToPrune). Empty for every other request. The
// values are the outcome label of focusgate_context_rescues_total.
type Rescue string

const (
	RescueRescued        Rescue = "rescued"
	RescueStillTooLong   Rescue = "still-too-long"
	RescueNothingToPrune Rescue = "nothing-to-prune"
)

// Rescues lists the rescue outcomes, for metrics that start every series at
// zero.
var Rescues = []Rescue{RescueRescued, RescueStillTooLong, RescueNothingToPrune}

// Family is a group of models that share a tokenizer and the way a retriever
// call to them is made.
type Family uint8

const (
	// OtherFamily is every model focusgate does not know, and OpenAI's
	// older models (GPT-4, GPT-3.5): cl100k_base.
	FamilyOther Family = iota
	// GPT4o is OpenAI's GPT-4o generation and its non-reasoning successors
	// (gpt-4.1, gpt-4.5, gpt-oss): o200k_base.
	FamilyGPT4o
	// Reasoning is OpenAI's reasoning models (o-series, gpt-5): o200k_base,
	// no temperature, max_completion_tokens.
	FamilyReasoning
	// Claude is Anthropic's models, whose tokenizer is not public.
	FamilyClaude
	// GeminiFamily is Google's Gemini models, whose tokenizer is not
	// public either.
	FamilyGemini
)

// families maps name prefixes, after BaseModel, to families; the first
// match wins, so longer prefixes come first where they overlap.
var families = []struct {
	prefix string
	family Family
}{
	{"gpt-4o", FamilyGPT4o}, {"chatgpt-4o", FamilyGPT4o}, {"gpt-4.1", FamilyGPT4o}, {"gpt-4.5", FamilyGPT4o}, {"gpt-oss", FamilyGPT4o},
	{"gpt-5", FamilyReasoning}, {"o1", FamilyReasoning}, {"o3", FamilyReasoning}, {"o4", FamilyReasoning},
	{"claude", FamilyClaude},
	{"gemini", FamilyGemini},
}

// FamilyOf says which family a model belongs to.
func FamilyOf(model string) Family {
	m := BaseModel(model)
	for _, f := range families {
		if strings.HasPrefix(m, f.prefix) {
			return f.family
		}
	}
	return FamilyOther
}

// BaseModel lowercases a model name and reduces it to the name its family's
// prices and windows are listed under: it drops a provider prefix such as
// "openai/" or "anthropic/" (names routed through LiteLLM or OpenRouter),
// Gemini's "models/" resource prefix, and the forms the clouds give model
// ids: Bedrock's region and vendor prefixes and version suffix
// ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", also inside an inference
// profile's ARN) and Vertex AI's version after "@"
// ("claude-sonnet-4-5@20250929"). A snapshot date that remains is left to
// the tables' look-up, which ignores it.
func BaseModel(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	if i := strings.IndexByte(m, '@'); i > 0 {
		m = m[:i]
	}
	// Bedrock: "us." (a cross-region profile's geography) and "anthropic."
	// (the vendor) are words before a dot; a model's own name, before its
	// first dot, has a digit ("gpt-4.1", "gemini-2.5-flash").
	for {
		prefix, rest, ok := strings.Cut(m, ".")
		if !ok || rest == "" || strings.ContainsAny(prefix, "0123456789") {
			break
		}
		m = rest
	}
	if i := strings.LastIndex(m, "-v"); i > 0 && bedrockVersion(m[i+2:]) {
		m = m[:i]
	}
	return m
}

// bedrockVersion says whether s, after "-v", is a Bedrock model id's version
// suffix: "1:0", "2", "1:0:200k".
func bedrockVersion(s string) bool {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') && c != ':' {
			return false
		}
	}
	return true
}
