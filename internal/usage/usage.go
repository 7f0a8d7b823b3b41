// Package usage reads what an upstream reported a call cost out of its
// response as it streams to the client, for the holdout's accounting of
// each step.
package usage

import (
	"bytes"

	"github.com/tidwall/gjson"
)

// Usage is what the upstream reported a call cost, in tokens. It has the
// fields of focusgate.UpstreamUsage, which the gateway converts it to: this
// library imports nothing of the project.
type Usage struct {
	// Input is every input token, cached or not; CacheRead is the part
	// read from the provider's prompt cache.
	Input, CacheRead, Output int
	// Reported says the response carried a usage report.
	Reported bool
}

// Meter reads the usage report out of a response as it streams by, whatever
// the API: the usage object of a chat completion or of its last stream
// chunk, of a Responses response or its response.completed event, of a
// Messages response or its message_start and message_delta events,
// Gemini's usageMetadata, and Converse's usage, in its response and in the
// metadata event of its stream. It looks only at the bytes around "usage",
// keeps at most maxUsageBytes of them, and never holds up the stream: the
// gateway copies the response to the client and writes the same bytes
// here.
//
// The zero Meter reads a response of JSON or server-sent events. A
// response that is an AWS event stream (Bedrock's converse-stream and
// invoke-with-response-stream) is binary frames, and the meter must be told
// so before the first write: with EventStream, or by SetContentType, which
// the gateway calls with the response's Content-Type. It is not safe for
// concurrent use.
type Meter struct {
	// EventStream says the response is an AWS event stream
	// (application/vnd.amazon.eventstream): frames whose payloads are each
	// one JSON event (converse-stream's, usage in metadata), or a chunk
	// event holding one base64 Messages stream event
	// (invoke-with-response-stream's, usage in message_start and
	// message_delta).
	EventStream bool

	pending []byte // bytes from a usage member's start, waiting for the rest of its object
	tail    []byte // the last bytes written, for a member name cut between writes
	scratch []byte // the tail and the next write, reused from write to write
	frames  frames // the event stream's framing, when EventStream is set
	usage   Usage
}

// SetContentType tells the meter how the response it is about to read is
// framed, from its Content-Type: an AWS event stream, or anything else,
// read as text.
func (m *Meter) SetContentType(contentType string) {
	m.EventStream = IsEventStream(contentType)
}

// maxUsageBytes bounds a usage object; a longer one is not a usage report.
const maxUsageBytes = 4 << 10

// usageNames are the members that hold a usage report, with their quotes.
var usageNames = [][]byte{[]byte(`"usage"`), []byte(`"usageMetadata"`)}

// tailBytes is what is kept of a write to find a member name split across
// two writes: the longest name, plus room for `": "`.
const tailBytes = len(`"usageMetadata"`) + 8

// Write scans p for usage reports. It never fails.
func (m *Meter) Write(p []byte) (int, error) {
	n := len(p)
	if m.EventStream {
		m.readFrames(p)
		return n, nil
	}
	if m.pending != nil {
		rest, done := m.finish(append(m.pending, p...), true)
		if !done {
			return n, nil
		}
		m.tail, p = m.tail[:0], rest
	}
	buf := p
	if len(m.tail) > 0 {
		m.scratch = append(append(m.scratch[:0], m.tail...), p...)
		buf = m.scratch
	}
	m.scan(buf, true)
	if m.pending == nil {
		m.tail = append(m.tail[:0], buf[max(0, len(buf)-tailBytes):]...)
	}
	return n, nil
}

// Usage returns what the response reported, merged over its events: the
// largest value seen of each count (streams report a running total, or
// parts of it in separate events).
func (m *Meter) Usage() Usage {
	return m.usage
}

// scan looks for usage members in buf. With more set, buf is part of a
// stream whose next write may finish a member whose object is not whole
// yet: it is kept pending. Without, buf is a whole document (an event
// stream's payload), and such a member is no report.
func (m *Meter) scan(buf []byte, more bool) {
	for len(buf) > 0 {
		at, name := -1, []byte(nil)
		for _, n := range usageNames {
			if i := bytes.Index(buf, n); i >= 0 && (at < 0 || i < at) {
				at, name = i, n
			}
		}
		if at < 0 {
			return
		}
		if at > 0 && buf[at-1] == '\\' {
			// An escaped quote: the name is inside a string, not a member.
			buf = buf[at+len(name):]
			continue
		}
		rest, done := m.finish(buf[at+len(name):], more)
		if !done {
			return
		}
		buf = rest
	}
}

// finish parses the usage object after a member name in p if it is whole,
// and returns the bytes after it. When it is not, done is false, and with
// more set a copy of p is kept pending.
func (m *Meter) finish(p []byte, more bool) (rest []byte, done bool) {
	m.pending = nil
	i := skipSpace(p, 0)
	if i < len(p) && p[i] == ':' {
		i = skipSpace(p, i+1)
	}
	if i < len(p) && p[i] != '{' {
		// "usage": null, or the name somewhere else than a member.
		return p[i:], true
	}
	end := -1
	if i < len(p) {
		end = objectEnd(p[i:])
	}
	if end < 0 {
		if more && len(p) <= maxUsageBytes {
			m.pending = append([]byte(nil), p...)
			return nil, false
		}
		return nil, true // too long to be a usage report
	}
	m.merge(gjson.ParseBytes(p[i : i+end]))
	return p[i+end:], true
}

func skipSpace(p []byte, i int) int {
	for i < len(p) && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n') {
		i++
	}
	return i
}

// objectEnd returns the length of the JSON object at the start of b, or -1
// if it does not end within b.
func objectEnd(b []byte) int {
	depth, inString, escaped := 0, false, false
	for i, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// merge folds one usage object into the meter. Each API names its counts
// its own way; input is normalised to every input token, cached or not
// (Anthropic reports cache reads and writes apart from input_tokens).
func (m *Meter) merge(u gjson.Result) {
	if !u.IsObject() {
		return
	}
	var got Usage
	switch {
	case u.Get("inputTokens").Exists() || u.Get("outputTokens").Exists(): // Converse
		// Like Anthropic's, Converse's inputTokens leaves out what was read
		// from or written to the prompt cache.
		got.CacheRead = int(u.Get("cacheReadInputTokens").Int())
		got.Input = int(u.Get("inputTokens").Int()) + got.CacheRead + int(u.Get("cacheWriteInputTokens").Int())
		got.Output = int(u.Get("outputTokens").Int())
	case u.Get("promptTokenCount").Exists() || u.Get("totalTokenCount").Exists(): // Gemini
		got.Input = int(u.Get("promptTokenCount").Int())
		got.CacheRead = int(u.Get("cachedContentTokenCount").Int())
		got.Output = int(u.Get("candidatesTokenCount").Int() + u.Get("thoughtsTokenCount").Int())
	case u.Get("prompt_tokens").Exists(): // chat completions
		got.Input = int(u.Get("prompt_tokens").Int())
		got.CacheRead = int(u.Get("prompt_tokens_details.cached_tokens").Int())
		got.Output = int(u.Get("completion_tokens").Int())
	case u.Get("cache_read_input_tokens").Exists() || u.Get("cache_creation_input_tokens").Exists(): // Messages
		got.CacheRead = int(u.Get("cache_read_input_tokens").Int())
		got.Input = int(u.Get("input_tokens").Int()) + got.CacheRead + int(u.Get("cache_creation_input_tokens").Int())
		got.Output = int(u.Get("output_tokens").Int())
	case u.Get("input_tokens").Exists() || u.Get("output_tokens").Exists(): // Responses, or Messages without cache fields
		got.Input = int(u.Get("input_tokens").Int())
		got.CacheRead = int(u.Get("input_tokens_details.cached_tokens").Int())
		got.Output = int(u.Get("output_tokens").Int())
	default:
		return
	}
	m.usage.Reported = true
	m.usage.Input = max(m.usage.Input, got.Input)
	m.usage.CacheRead = max(m.usage.CacheRead, got.CacheRead)
	m.usage.Output = max(m.usage.Output, got.Output)
}
