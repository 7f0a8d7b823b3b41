package cloudtest

import (
	"fmt"
	"sync/atomic"
)

// messageIDs numbers the fakes' answers: Claude Code joins consecutive
// assistant messages that share an id into one answer, so every answer
// needs its own.
var messageIDs atomic.Int64

// anthropicMessage is the Messages API's answer to a call that did not
// stream.
func anthropicMessage(model string, r Reply) map[string]any {
	in, out := r.usage()
	return map[string]any{
		"id": fmt.Sprintf("msg_cloudtest_%d", messageIDs.Add(1)), "type": "message", "role": "assistant", "model": model,
		"content": anthropicContent(r), "stop_reason": anthropicStop(r), "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": in, "output_tokens": out},
	}
}

func anthropicContent(r Reply) []any {
	content := []any{}
	if r.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": r.Text})
	}
	for i, c := range r.ToolCalls {
		content = append(content, map[string]any{"type": "tool_use", "id": callID("toolu_cloudtest_", i, c), "name": c.Name, "input": c.input()})
	}
	return content
}

func anthropicStop(r Reply) string {
	if len(r.ToolCalls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

// anthropicEvent is one event of a streamed Messages answer: its SSE event
// name is Data's "type".
type anthropicEvent struct {
	Type string
	Data map[string]any
}

// anthropicEvents is a streamed Messages answer, event by event: the same
// events whether Vertex sends them as SSE or Bedrock base64-encodes each
// one into an event-stream chunk.
func anthropicEvents(model string, r Reply) []anthropicEvent {
	in, out := r.usage()
	var evs []anthropicEvent
	add := func(typ string, data map[string]any) {
		data["type"] = typ
		evs = append(evs, anthropicEvent{typ, data})
	}
	add("message_start", map[string]any{"message": map[string]any{
		"id": fmt.Sprintf("msg_cloudtest_%d", messageIDs.Add(1)), "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": in, "output_tokens": 1}}})
	index := 0
	if r.Text != "" {
		add("content_block_start", map[string]any{"index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		add("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "text_delta", "text": r.Text}})
		add("content_block_stop", map[string]any{"index": index})
		index++
	}
	for i, c := range r.ToolCalls {
		add("content_block_start", map[string]any{"index": index, "content_block": map[string]any{
			"type": "tool_use", "id": callID("toolu_cloudtest_", i, c), "name": c.Name, "input": map[string]any{}}})
		add("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(c.input())}})
		add("content_block_stop", map[string]any{"index": index})
		index++
	}
	add("message_delta", map[string]any{"delta": map[string]any{"stop_reason": anthropicStop(r), "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": out}})
	add("message_stop", map[string]any{})
	return evs
}

// anthropicError is the Messages API's error body.
func anthropicError(ref Refusal) map[string]any {
	return map[string]any{"type": "error", "error": map[string]any{"type": ref.Code, "message": ref.Message}}
}
