package usage

import (
	"strings"
	"testing"
)

// The usage reports of each API, as their responses and streams carry them,
// are read the same whichever way the bytes are cut into writes.
func TestMeterReadsEachAPIsUsage(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Usage
	}{
		{"chat completion, with a usage look-alike in its content",
			`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"He wrote \"usage\": {\"prompt_tokens\": 999999}"}}],"usage":{"prompt_tokens":1200,"completion_tokens":30,"total_tokens":1230,"prompt_tokens_details":{"cached_tokens":1024}}}`,
			Usage{Input: 1200, CacheRead: 1024, Output: 30, Reported: true}},
		{"chat stream with include_usage",
			"data: {\"id\":\"c\",\"choices\":[{\"delta\":{\"content\":\"Hi\"}}],\"usage\":null}\n\n" +
				"data: {\"id\":\"c\",\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n" +
				"data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":900,\"completion_tokens\":12,\"total_tokens\":912}}\n\n" +
				"data: [DONE]\n\n",
			Usage{Input: 900, Output: 12, Reported: true}},
		{"chat stream without usage",
			"data: {\"id\":\"c\",\"choices\":[{\"delta\":{\"content\":\"usage\"}}]}\n\ndata: [DONE]\n\n",
			Usage{}},
		{"responses stream",
			"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"usage\":null}}\n\n" +
				"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"ok\"}\n\n" +
				"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"output\":[{\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"ok\"}]}],\"usage\":{\"input_tokens\":5000,\"input_tokens_details\":{\"cached_tokens\":4096},\"output_tokens\":200,\"output_tokens_details\":{\"reasoning_tokens\":128},\"total_tokens\":5200}}}\n\n",
			Usage{Input: 5000, CacheRead: 4096, Output: 200, Reported: true}},
		{"messages stream: input in message_start, output in message_delta",
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":10,\"cache_creation_input_tokens\":500,\"cache_read_input_tokens\":4000,\"output_tokens\":1}}}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n" +
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":321}}\n\n" +
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
			Usage{Input: 4510, CacheRead: 4000, Output: 321, Reported: true}},
		{"messages response, pretty-printed",
			"{\n  \"id\": \"msg_1\",\n  \"content\": [{\"type\": \"text\", \"text\": \"Hi\"}],\n  \"usage\" :\n  {\n    \"input_tokens\": 2095,\n    \"output_tokens\": 503\n  }\n}",
			Usage{Input: 2095, Output: 503, Reported: true}},
		{"gemini stream: running totals",
			"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"A\"}]}}],\"usageMetadata\":{\"promptTokenCount\":800,\"candidatesTokenCount\":5,\"totalTokenCount\":805,\"cachedContentTokenCount\":512}}\r\n\r\n" +
				"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"B\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":800,\"candidatesTokenCount\":40,\"thoughtsTokenCount\":10,\"totalTokenCount\":850,\"cachedContentTokenCount\":512}}\r\n\r\n",
			Usage{Input: 800, CacheRead: 512, Output: 50, Reported: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for size := 1; size <= len(tt.body); size++ {
				var m Meter
				for rest := tt.body; rest != ""; {
					n := min(size, len(rest))
					if w, err := m.Write([]byte(rest[:n])); w != n || err != nil {
						t.Fatalf("Write: %d, %v", w, err)
					}
					rest = rest[n:]
				}
				if got := m.Usage(); got != tt.want {
					t.Fatalf("in writes of %d bytes: %+v, want %+v", size, got, tt.want)
				}
			}
		})
	}
}

// A "usage" member whose value never closes is given up past a bound: the
// meter holds at most a few kilobytes of any response.
func TestMeterIsBounded(t *testing.T) {
	var m Meter
	m.Write([]byte(`{"usage":{"prompt_tokens":1,"x":"`))
	chunk := []byte(strings.Repeat("a", 1024))
	for range 64 {
		m.Write(chunk)
		if len(m.pending) > maxUsageBytes+len(chunk) {
			t.Fatalf("the meter holds %d bytes", len(m.pending))
		}
	}
	m.Write([]byte(`"}} {"usage":{"prompt_tokens":7,"completion_tokens":2}}`))
	if got := m.Usage(); got != (Usage{Input: 7, Output: 2, Reported: true}) {
		t.Errorf("after an unbounded member: %+v", got)
	}
}

func FuzzMeter(f *testing.F) {
	f.Add([]byte(`{"usage":{"prompt_tokens":1}}`), 3)
	f.Add([]byte("data: {\"usageMetadata\":{\"promptTokenCount\":2}}\n\n"), 1)
	f.Fuzz(func(t *testing.T, body []byte, size int) {
		size = max(1, size%64)
		var whole, cut Meter
		whole.Write(body)
		for rest := body; len(rest) > 0; {
			n := min(size, len(rest))
			cut.Write(rest[:n])
			rest = rest[n:]
		}
		if whole.Usage().Reported && !cut.Usage().Reported {
			t.Errorf("found whole, lost when cut: %+v", whole.Usage())
		}
	})
}

// BenchmarkMeter is the work of reading the usage out of an answer as it
// streams by.
func BenchmarkMeter(b *testing.B) {
	chunk := []byte("data: {\"id\":\"c\",\"choices\":[{\"delta\":{\"content\":\"Hello, this is a token or two\"}}]}\n\n")
	b.SetBytes(int64(len(chunk)))
	var m Meter
	for b.Loop() {
		m.Write(chunk)
	}
}
