package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/bench/workload"
	"github.com/focusgate/focusgate/internal/budget"
	"github.com/focusgate/focusgate/pipeline"
)

// What detection holds counts against the inspection budget, not only the
// body: a body of many tiny parts costs several times its size to index,
// and a budget sized in bodies would let a few of them take gigabytes.
func TestDetectionMemoryCountsAgainstTheBudget(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"model":"gpt-4.1","messages":[{"role":"user","content":[`)
	for i := range 200_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		// Each part names an element, as a page does, so that the body
		// may hold one and is walked.
		fmt.Fprintf(&b, `{"type":"text","text":"[w%d]"}`, i%10)
	}
	b.WriteString(`]}]}`)
	parts := b.Bytes()
	page := workload.ToolLoop("gpt-4.1", [2]string{"snapshot", readPage(t, "bgym-pr301_workarena_standard_laptop_form.txt")})

	for _, tt := range []struct {
		name   string
		body   []byte
		status focusgate.Status
		reason focusgate.Reason
	}{
		// 5 MB of body indexed by 200,000 segments: about six times the
		// body's size.
		{"many parts", parts, focusgate.StatusSkipped, focusgate.ReasonBusy},
		// A page holds its decoded text and a record per line: about
		// two and a half times its size.
		{"a page", page, focusgate.StatusPruned, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := goldenOptions()
			opts.Memory = budget.New(5 * int64(len(tt.body)))
			p := pipeline.New(opts)
			_, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: tt.body})
			if out.Status != tt.status || out.Reason != tt.reason {
				t.Errorf("with a budget of five bodies: %s %s, want %s %s", out.Status, out.Reason, tt.status, tt.reason)
			}
			if n := opts.Memory.Used(); n != 0 {
				t.Errorf("%d bytes of the budget still held after the request", n)
			}
		})
	}
}
