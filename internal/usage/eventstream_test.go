package usage

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// frame encodes one event-stream frame as Bedrock sends it, with the AWS
// SDK's own encoder.
func frame(t testing.TB, messageType, eventType, payload string) []byte {
	t.Helper()
	var headers eventstream.Headers
	headers.Set(":message-type", eventstream.StringValue(messageType))
	if messageType == "exception" {
		headers.Set(":exception-type", eventstream.StringValue(eventType))
	} else {
		headers.Set(":event-type", eventstream.StringValue(eventType))
	}
	headers.Set(":content-type", eventstream.StringValue("application/json"))
	var buf bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&buf, eventstream.Message{Headers: headers, Payload: []byte(payload)}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// chunk is a frame of invoke-with-response-stream: one Messages stream
// event, base64-encoded in {"bytes":...}, with Bedrock's padding member.
func chunk(t testing.TB, event string) []byte {
	t.Helper()
	return frame(t, "event", "chunk", `{"bytes":"`+base64.StdEncoding.EncodeToString([]byte(event))+`","p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJK"}`)
}

func concat(frames ...[]byte) []byte {
	return bytes.Join(frames, nil)
}

// A Bedrock stream's usage is read whatever the boundaries of the writes
// that carry it: every frame is split at every byte.
func TestMeterReadsEventStreams(t *testing.T) {
	tests := []struct {
		name string
		body []byte
		want Usage
	}{
		{"converse-stream: usage in the metadata event, a usage look-alike in a delta",
			concat(
				frame(t, "event", "messageStart", `{"p":"abcd","role":"assistant"}`),
				frame(t, "event", "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"He wrote \"usage\":{\"inputTokens\":99999}"},"p":"abcdefgh"}`),
				frame(t, "event", "contentBlockStop", `{"contentBlockIndex":0,"p":"ab"}`),
				frame(t, "event", "messageStop", `{"p":"abcdefghijklmnop","stopReason":"end_turn"}`),
				frame(t, "event", "metadata", `{"metrics":{"latencyMs":812},"p":"abc","usage":{"cacheReadInputTokens":4096,"cacheWriteInputTokens":512,"inputTokens":37,"outputTokens":120,"totalTokens":4765}}`),
			),
			Usage{Input: 4645, CacheRead: 4096, Output: 120, Reported: true}},
		{"invoke-with-response-stream: message_start's usage, then message_delta's output",
			concat(
				chunk(t, `{"type":"message_start","message":{"id":"msg_bdrk_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":2048,"output_tokens":4}}}`),
				chunk(t, `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
				chunk(t, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Clicking Save."}}`),
				chunk(t, `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":57}}`),
				chunk(t, `{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":12,"outputTokenCount":57,"invocationLatency":1200,"firstByteLatency":300}}`),
			),
			Usage{Input: 2060, CacheRead: 2048, Output: 57, Reported: true}},
		{"an exception frame is no report",
			concat(
				frame(t, "event", "messageStart", `{"role":"assistant"}`),
				frame(t, "exception", "throttlingException", `{"message":"Too many requests","usage":{"inputTokens":5,"outputTokens":5}}`),
			),
			Usage{}},
		{"a frame longer than the bound passes unread, and the next is read",
			concat(
				frame(t, "event", "contentBlockDelta", `{"delta":{"text":"`+strings.Repeat("x", maxFrameBytes)+`"},"usage":{"inputTokens":1,"outputTokens":1}}`),
				frame(t, "event", "metadata", `{"usage":{"inputTokens":10,"outputTokens":2,"totalTokens":12}}`),
			),
			Usage{Input: 10, Output: 2, Reported: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Writes of every size, and a write cut at every offset.
			for size := 1; size <= len(tt.body); size = next(size, len(tt.body)) {
				m := Meter{EventStream: true}
				writeIn(t, &m, tt.body, size)
				if got := m.Usage(); got != tt.want {
					t.Fatalf("in writes of %d bytes: %+v, want %+v", size, got, tt.want)
				}
			}
			for cut := 0; cut <= len(tt.body); cut = next(cut, len(tt.body)) {
				var m Meter
				m.SetContentType("application/vnd.amazon.eventstream")
				m.Write(tt.body[:cut])
				m.Write(tt.body[cut:])
				if got := m.Usage(); got != tt.want {
					t.Fatalf("cut at %d: %+v, want %+v", cut, got, tt.want)
				}
			}
		})
	}
}

// next steps through sizes and offsets: every one up to a few frames' worth,
// then by larger steps through a long body, its end included.
func next(i, n int) int {
	switch {
	case i < 1024 || i == n:
		return i + 1
	case i+97 > n:
		return n
	}
	return i + 97
}

func writeIn(t *testing.T, m *Meter, body []byte, size int) {
	t.Helper()
	for rest := body; len(rest) > 0; {
		n := min(size, len(rest))
		if w, err := m.Write(rest[:n]); w != n || err != nil {
			t.Fatalf("Write: %d, %v", w, err)
		}
		rest = rest[n:]
	}
}

// A stream whose framing breaks (a prelude that fails its checksum) is not
// read any further, and never makes the meter fail or hold more; nor does a
// frame that fails its own checksum, which is skipped.
func TestMeterSurvivesBrokenEventStreams(t *testing.T) {
	usage := frame(t, "event", "metadata", `{"usage":{"inputTokens":10,"outputTokens":2}}`)
	corrupt := bytes.Clone(usage)
	corrupt[len(corrupt)-10] ^= 0xff // inside the payload: the frame's CRC fails
	var m Meter
	m.EventStream = true
	m.Write(corrupt)
	if got := m.Usage(); got.Reported {
		t.Errorf("a frame that failed its checksum was read: %+v", got)
	}
	m.Write(usage)
	if got := m.Usage(); got != (Usage{Input: 10, Output: 2, Reported: true}) {
		t.Errorf("after a corrupt frame, the next one gives %+v", got)
	}
	broken := bytes.Clone(usage)
	broken[9] ^= 0xff // the prelude's CRC
	m = Meter{EventStream: true}
	m.Write(broken)
	m.Write(usage)
	if got := m.Usage(); got.Reported || !m.frames.lost {
		t.Errorf("after a broken prelude: %+v, framing lost %v", got, m.frames.lost)
	}
}

// A frame split across writes is held in memory up to the bound, never
// more: a longer one is counted through, not gathered.
func TestMeterEventStreamIsBounded(t *testing.T) {
	long := frame(t, "event", "contentBlockDelta", `{"delta":{"text":"`+strings.Repeat("y", 4*maxFrameBytes)+`"}}`)
	m := Meter{EventStream: true}
	writeIn(t, &m, long, 1000)
	if cap(m.frames.body) > 0 {
		t.Errorf("a frame over the bound was gathered: %d bytes held", cap(m.frames.body))
	}
}

func TestIsEventStream(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/vnd.amazon.eventstream":                true,
		"Application/VND.Amazon.EventStream; charset=utf-8": true,
		"application/json":                                  false,
		"text/event-stream":                                 false,
		"":                                                  false,
	} {
		if got := IsEventStream(ct); got != want {
			t.Errorf("IsEventStream(%q) = %v, want %v", ct, got, want)
		}
	}
}

func FuzzMeterEventStream(f *testing.F) {
	f.Add(concat(frame(f, "event", "metadata", `{"usage":{"inputTokens":1,"outputTokens":2}}`), chunk(f, `{"usage":{"output_tokens":3}}`)), 7)
	f.Add(frame(f, "exception", "x", `{}`), 1)
	f.Fuzz(func(t *testing.T, body []byte, size int) {
		size = max(1, size%64)
		whole, cut := Meter{EventStream: true}, Meter{EventStream: true}
		whole.Write(body)
		for rest := body; len(rest) > 0; {
			n := min(size, len(rest))
			cut.Write(rest[:n])
			rest = rest[n:]
		}
		if whole.Usage() != cut.Usage() {
			t.Errorf("whole %+v, cut %+v", whole.Usage(), cut.Usage())
		}
		if len(cut.frames.body) > maxFrameBytes {
			t.Errorf("%d bytes of a frame held", len(cut.frames.body))
		}
	})
}

// BenchmarkMeterEventStream is the work of reading an invoke stream's
// frames as they go by: a chunk per write, as Bedrock sends them.
func BenchmarkMeterEventStream(b *testing.B) {
	delta := chunk(b, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello, this is a token or two"}}`)
	b.SetBytes(int64(len(delta)))
	b.ReportAllocs()
	m := Meter{EventStream: true}
	for b.Loop() {
		m.Write(delta)
	}
}

// The frames the tests build are what the AWS SDK's decoder reads back, so
// the encoder is the real framing.
func TestFramesAreAWSFrames(t *testing.T) {
	raw := frame(t, "event", "metadata", `{"usage":{}}`)
	msg, err := eventstream.NewDecoder().Decode(bytes.NewReader(raw), nil)
	if err != nil || string(msg.Payload) != `{"usage":{}}` {
		t.Fatalf("decoded %q, %v", msg.Payload, err)
	}
	if total := binary.BigEndian.Uint32(raw); int(total) != len(raw) {
		t.Fatalf("prelude says %d bytes, frame has %d", total, len(raw))
	}
}
