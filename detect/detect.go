package detect

import (
	"bytes"
	"errors"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/internal/memo"
)

// Detection thresholds and the bounds of the context handed to the retriever.
const (
	// MinLines is the number of consecutive tree lines a block needs. Real pages have
	// far more (the smallest of 491 recorded BrowserGym trees has 19), while markdown
	// lists, code and logs rarely keep a tree grammar for this long.
	MinLines = 8
	// MinIDLines is the number of lines of a block that must carry an element id
	// ("[12]", "[ref=e3]", ...): prose and code never do, so this rejects, for example,
	// a run of shell lines such as `echo 'building'` that happens to parse.
	MinIDLines = 3
	// MaxGoalBytes bounds Observation.Goal; the start of a goal is kept.
	MaxGoalBytes = 4096
	// MaxHistoryBytes bounds Observation.History; the most recent history is kept.
	MaxHistoryBytes = 8192
)

// ErrNotJSON is returned, wrapped, by Find when a body is not a JSON object.
var ErrNotJSON = errors.New("detect: request body is not a JSON object")

// ErrOverBudget is returned when Options.Reserve refused the memory that
// detecting the observations of a body would hold.
var ErrOverBudget = errors.New("detect: inspecting the body would exceed its memory budget")

// Block is one tree found in a plain string.
type Block struct {
	Start, End int // byte span of the tree in the string: first byte of its first line, end of its last line (no trailing newline)
	Format     Format
	Lines      []focusgate.Line // offsets relative to Start, i.e. into s[Start:End]
	FocusedBID string           // "" when unknown
}

// Observation is a Block found inside a request body. Its Text is the tree
// as the tool printed it: every wrapper a client put around it is peeled
// (JSON escaping, a file read's line numbers), and AppendPruned puts them
// back.
type Observation struct {
	Block
	Text             string // the tree's text, every wrapper peeled; Block's offsets are in the text it was found in, Lines' in Text
	Path             string // gjson-style path of the JSON string value, e.g. "messages.1.content.2.text" or "input.3.content.0.text"
	RawStart, RawEnd int    // byte offsets in the request body of the tree as it lies in that JSON string literal (quotes excluded), wrappers included: what AppendPruned replaces
	Goal             string
	History          string
	// Nested counts the JSON encodings between the body's string and the tree:
	// 0 when the string holds the tree, 1 when it holds a JSON text (such as an
	// MCP tool result passed through JSON.stringify, whole or cut, maybe read
	// back from a file with line numbers) whose string holds it, 2 for a text
	// stringified twice. The raw span then covers the tree escaped Nested+1
	// times, and AppendPruned escapes new text as often.
	Nested int
	// Cut says the client cut the output that holds the tree and left a
	// marker that says so: the model was shown part of the tool's output
	// and told where the rest is, which it may read on.
	Cut bool
	// Known is what pruning works out about Text, kept with the tree while
	// the Finder remembers the string it was found in: the same page in a
	// later request comes with the same Known.
	Known *focusgate.Known

	// places are where the tree's lines lie in the body, from base on, as
	// the layers that peeled it placed them.
	places []place
	base   int
	// written is the Finder's memory of trees written back; nil for none.
	written *memo.Memo[writing]
}

// Options tune Find.
type Options struct {
	All bool // select every observation, not only the newest
	// Newest, without All, is how many of the newest observations to
	// select (one when zero). The older pages are then never decoded or
	// searched, which matters to a caller that remembers nothing of them.
	Newest int
	// Reserve, when set, is asked for the memory detection is about to hold
	// beyond the body itself: its index of the body's strings and turns,
	// decoded text and found lines. A body of many small parts costs several
	// times its size; once Reserve refuses, detection stops and returns
	// ErrOverBudget. The caller gives the memory back when it is done with
	// the observations.
	Reserve func(n int64) bool
}

// Find returns the observations of a request body, oldest first. A body with no
// observation gives (nil, nil); a body that is not a JSON object gives an error
// wrapping ErrNotJSON.
//
// By default only the newest observation is returned, the one a retriever is asked
// about; with Options.All every one is, for a caller that re-applies earlier
// selections to the older ones. An observation's goal and history come only from the
// conversation up to it, so they are the same in every request that carries it.
// Trees are looked for in system, user
// and tool messages (Chat), in instructions, input messages and function call
// outputs (Responses), in the system prompt, user text and tool results
// (Messages), in user text and function responses (Gemini), and in user text
// and tool results (Converse); assistant turns are only read as history.
func Find(body []byte, api focusgate.API, opts Options) ([]Observation, error) {
	return (*Finder)(nil).Find(body, api, opts)
}

// Finder is Find with a memory of the texts it has decoded and searched for
// trees. An agent sends each page again in every later request of its
// conversation, and the gateway looks at every page of a request, so without
// it a conversation of n steps decodes and parses n(n+1)/2 pages. A Finder
// remembers each JSON string that could hold a tree, by its escaped bytes, with
// its decoded text and the trees found in it.
//
// A Finder also remembers the bytes each tree was last written back as
// (see AppendPruned): a page pruned again with the selection it had, an
// older page of a conversation or a cache hit, is copied, not written again.
//
// A nil *Finder remembers nothing. A Finder is safe for concurrent use.
type Finder struct {
	seen    *strMemory
	shapes  *memo.Memo[shape]
	written *memo.Memo[writing]
}

// searched is what a Finder remembers of one JSON string: its decoded text
// and the trees in it, all shared with every caller and never modified.
type searched struct {
	text  string
	trees []tree
	id    uint64 // the string's number (see stringIDs), 0 for one not searched
}

// NewFinder returns a Finder that remembers about maxBytes of strings, their
// decoded texts and their trees (eleven sixteenths), of the shapes of the
// units around them (a sixteenth, see shape), and of trees as they were
// written back (a quarter).
func NewFinder(maxBytes int) *Finder {
	return &Finder{seen: newStrMemory(maxBytes - maxBytes/4 - maxBytes/16), shapes: memo.New[shape](maxBytes / 16),
		written: memo.New[writing](maxBytes / 4)}
}

// Find is the package's Find, remembering what it decodes and finds.
func (f *Finder) Find(body []byte, api focusgate.API, opts Options) ([]Observation, error) {
	r, err := f.Read(body, api, opts)
	return r.Observations, err
}

// Request is what Read learns of a request body.
type Request struct {
	Observations []Observation
	// Model is the action model as the upstream reads it: the last of
	// duplicate "model" members, escaped names included.
	Model string
	// Messages is the number of messages or input items read, without the
	// instructions or system prompt: a Messages API message counts once
	// however many turns its blocks make.
	Messages int
}

// Read is Find that also reports the request's model, read in the same walk.
func (f *Finder) Read(body []byte, api focusgate.API, opts Options) (Request, error) {
	r, _, err := f.read(body, api, opts)
	return r, err
}

// read is Read, and the conversation it read.
func (f *Finder) read(body []byte, api focusgate.API, opts Options) (Request, *conversation, error) {
	var seen *strMemory
	if f != nil {
		seen = f.seen
	}
	c, err := parseConversation(body, api, seen, opts.Reserve)
	if err != nil {
		return Request{}, nil, err
	}
	if f != nil {
		c.written, c.shapes = f.written, f.shapes
	}
	obs := c.observations(opts)
	if err := c.account(); err != nil {
		return Request{}, nil, err
	}
	c.rememberShapes()
	return Request{Observations: obs, Model: c.model, Messages: c.countMessages()}, c, nil
}

// MayHoldPage reports whether body may hold a page, before any of it is
// parsed. Read decodes no string whose content lacks both MinIDLines element
// ids (enoughIDs) and a format's id cue (hasIDCues), and a string's content
// is bytes of the body: a body that fails both tests as a whole holds no
// page in any of its strings. Most of a gateway's traffic is such bodies,
// and one search for brackets costs a small part of Read's validating walk.
// A body that does not open as a JSON object passes, so that Read can say
// it is not JSON.
func MayHoldPage(body []byte) bool {
	if i := skipSpace(body, 0); i == len(body) || body[i] != '{' {
		return true
	}
	return enoughIDs(body, MinIDLines) || hasIDCues(asString(body))
}

// Model returns a request body's "model" as the upstream reads it (the last
// of duplicate members, escaped names included), or "" when there is none.
// It reads the members at the body's end first (TrailingModel), where the
// Python SDKs name the model, and scans every top-level member only when
// they do not answer. Read reports the same in its own walk.
func Model(body []byte) string {
	if model, sure := TrailingModel(body); sure {
		return model
	}
	return scanModel(body)
}

// scanModel is Model by a scan of every top-level member. It reads the body
// in place: gjson.ParseBytes copies it whole, and Model is asked on the
// inspection's busy path, when memory is short. The model is copied out of
// the body, whose buffer the gateway reuses.
func scanModel(body []byte) string {
	var model string
	gjson.Parse(asString(body)).ForEach(func(k, v gjson.Result) bool {
		if k.String() == "model" {
			model = v.String()
		}
		return true
	})
	return strings.Clone(model)
}

// QuickModel returns the model of a request body that is not searched, for
// the outcome's model label: its first "model" member when the body names it
// first (LeadingModel), else its last when the body names it after its
// conversation (TrailingModel), else its first, which a scan finds without
// walking the members after it. In a valid body without duplicate members it
// is the model as Model reads it. The Python SDKs of OpenAI and Anthropic,
// and Stagehand, name the model after the conversation: a forward scan would
// walk the whole conversation to find it.
func QuickModel(body []byte) string {
	if model := LeadingModel(body); model != "" {
		return model
	}
	if model, sure := TrailingModel(body); sure {
		return model
	}
	return gjson.GetBytes(body, "model").String()
}

// trailingBytes is how far from a body's end TrailingModel reads it: enough
// for the settings an agent sends after its conversation (the model,
// sampling settings, tool choice), little enough to cost nothing.
const trailingBytes = 4 << 10

// TrailingModel reads a request body's top-level members backwards from its
// end, over the members that start within its last trailingBytes, for the
// last "model" member: the one the upstream reads. sure says the answer is
// the body's: a string model was found, or the whole object was read
// without one. Reading backwards relies on the body being valid JSON, so
// the answer is for labels, not decisions: bytes that are not JSON may give
// any answer, and a model that is not a string, or members that start
// earlier, are left to a forward scan (sure is false).
func TrailingModel(body []byte) (model string, sure bool) {
	floor := max(0, len(body)-trailingBytes)
	i := lastNonSpace(body, len(body)-1, 0)
	if i < 0 || body[i] != '}' {
		return "", false
	}
	// The object's first member follows its brace, and nothing but space
	// comes before that brace.
	opening := func(brace int) bool { return lastNonSpace(body, brace-1, 0) < 0 }
	i = lastNonSpace(body, i-1, floor)
	for i >= floor {
		if body[i] == '{' {
			return "", opening(i)
		}
		v := valueStart(body, i, floor)
		colon := lastNonSpace(body, v-1, floor)
		if v < 0 || colon < 0 || body[colon] != ':' {
			return "", false
		}
		k := lastNonSpace(body, colon-1, floor)
		if k < 0 || body[k] != '"' {
			return "", false
		}
		ks := openingQuote(body, k, floor)
		if ks < 0 {
			return "", false
		}
		key, _, err := scanString(body, ks)
		if err != nil {
			return "", false
		}
		if string(word(body, key)) == "model" {
			lit, _, ok, err := stringOrSkip(body, v, 1)
			if err != nil || !ok {
				return "", false
			}
			return string(word(body, lit)), true
		}
		p := lastNonSpace(body, ks-1, floor)
		switch {
		case p >= 0 && body[p] == ',':
			i = lastNonSpace(body, p-1, floor)
		case p >= 0 && body[p] == '{':
			return "", opening(p)
		default:
			return "", false
		}
	}
	return "", false
}

// lastNonSpace returns the offset of the last byte of b[floor:i+1] that is
// not JSON whitespace, or -1.
func lastNonSpace(b []byte, i, floor int) int {
	for ; i >= floor; i-- {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
		default:
			return i
		}
	}
	return -1
}

// openingQuote returns the offset of the quote that opens the string literal
// whose closing quote is b[q], or -1 when it is not within b[floor:]. In
// valid JSON every quote a string holds is escaped, so the string opens at
// the nearest quote before q that an even run of backslashes precedes.
func openingQuote(b []byte, q, floor int) int {
	for j := q; ; {
		j = bytes.LastIndexByte(b[floor:j], '"')
		if j < 0 {
			return -1
		}
		j += floor
		k := j
		for k > floor && b[k-1] == '\\' {
			k--
		}
		if (j-k)%2 == 0 {
			return j
		}
	}
}

// valueStart returns the offset at which the JSON value whose last byte is
// b[end] starts, reading backwards no further than floor; -1 when it does
// not start within b[floor:]. Brackets are matched by count, which is enough
// for valid JSON.
func valueStart(b []byte, end, floor int) int {
	if end < floor {
		return -1
	}
	switch b[end] {
	case '"':
		return openingQuote(b, end, floor)
	case '}', ']':
		depth := 0
		for i := end; i >= floor; i-- {
			switch b[i] {
			case '"':
				if i = openingQuote(b, i, floor); i < 0 {
					return -1
				}
			case '}', ']':
				depth++
			case '{', '[':
				if depth--; depth == 0 {
					return i
				}
			}
		}
		return -1
	}
	i := end
	for i > floor {
		switch b[i-1] {
		case ' ', '\t', '\n', '\r', ',', ':', '[', '{':
			return i
		}
		i--
	}
	return -1
}

// leadingBytes is how much of a body LeadingModel reads: enough for the
// members an agent sends before its conversation (the model, its settings, a
// note), little enough to cost nothing beside detection.
const leadingBytes = 4 << 10

// namedWithin is how far into a body LeadingModel looks for the name
// "model" before it walks the members: agents that name the model first
// write it in their first hundred bytes, and a body that names it after its
// conversation would otherwise be walked into that conversation, where the
// walk is cut off.
const namedWithin = 512

// errLooked ends LeadingModel's walk at the model.
var errLooked = errors.New("model read")

// LeadingModel is a quick look for decisions taken before detection, to be
// confirmed with Model or Read, since a later duplicate would override it:
// the first "model" member if the body's first namedWithin bytes hold its
// name unescaped and it ends within the body's first leadingBytes, else
// "". Agents that name the model first (Claude Code, Codex, the Node SDKs)
// are answered from their first bytes, so that a request whose model is not
// pruned skips detection. The Python SDKs of OpenAI and Anthropic, and
// Stagehand, name it after the conversation: finding it there would scan the
// whole body once more before detection, which reads the model in its own
// walk.
func LeadingModel(body []byte) string {
	if !bytes.Contains(body[:min(len(body), namedWithin)], []byte(`"model"`)) {
		return ""
	}
	head := body[:min(len(body), leadingBytes)]
	var model string
	_, _ = eachMember(head, skipSpace(head, 0), 0, func(key []byte, v int) (int, error) {
		if string(key) != "model" {
			return skipValue(head, v, 1)
		}
		if lit, _, ok, _ := stringOrSkip(head, v, 1); ok {
			model = string(word(head, lit))
		}
		return v, errLooked
	})
	return model
}
