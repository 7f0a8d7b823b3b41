package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/pipeline"
)

// A body the gateway could not read (its encoding did not decode, or there
// was no memory to decode it in) goes out as it came, reported skipped for
// that reason, without being looked at: the pruner here would panic, and a
// panic would report failed-open.
func TestUnreadBodiesAreSkippedForTheirReason(t *testing.T) {
	opts := goldenOptions()
	opts.Pruner = panickingPruner{}
	p := pipeline.New(opts)
	page := readPage(t, "bgym-pr301_workarena_standard_laptop_form.txt")
	body, _ := json.Marshal(map[string]any{"model": "gpt-4.1", "messages": []any{
		map[string]any{"role": "user", "content": "Order a laptop"},
		map[string]any{"role": "tool", "tool_call_id": "a", "content": page},
	}})
	for _, reason := range []focusgate.Reason{focusgate.ReasonUndecodable, focusgate.ReasonBusy} {
		t.Run(string(reason), func(t *testing.T) {
			got, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIMessages, Body: body, Unread: reason})
			if !bytes.Equal(got, body) || out.API != focusgate.APIMessages || out.Status != focusgate.StatusSkipped || out.Reason != reason || len(out.Pages) != 0 {
				t.Errorf("%s %s %s, %d pages, body changed %v; want messages skipped %s, no page, the body as it came",
					out.API, out.Status, out.Reason, len(out.Pages), !bytes.Equal(got, body), reason)
			}
		})
	}
}
