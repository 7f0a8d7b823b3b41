package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/bench/workload"
	"github.com/focusgate/focusgate/detect"
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

// A request skipped before its model is read (over the budget, shutting
// down) names no model, unless the caller wants one: the holdout prices
// each step by it. Its body names the model after the conversation, as the
// Python SDKs write it, and an Azure deployment stands for the model.
func TestASkippedRequestNamesItsModelWhenAsked(t *testing.T) {
	body := workload.ToolLoop("team-deployment", [2]string{"snapshot", readPage(t, "bgym-pr301_workarena_standard_laptop_form.txt")})
	if m := detect.LeadingModel(body); m != "" {
		t.Fatalf("the body names its model among its leading members (%q); the test needs it last", m)
	}
	for _, tt := range []struct {
		name   string
		opts   func(*pipeline.Options)
		stop   bool
		reason focusgate.Reason
	}{
		{"busy", func(o *pipeline.Options) { o.InspectBudgetBytes = 1 << 10 }, false, focusgate.ReasonBusy},
		{"shutting down", func(*pipeline.Options) {}, true, focusgate.ReasonShutdown},
	} {
		for _, want := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/want model %v", tt.name, want), func(t *testing.T) {
				opts := goldenOptions()
				tt.opts(&opts)
				p := pipeline.New(opts)
				if tt.stop {
					p.Stop()
				}
				req := focusgate.Request{API: focusgate.APIChat, Body: body, WantModel: want,
					Aliases: map[string]string{"team-deployment": "gpt-4.1"}}
				got, out := p.Rewrite(context.Background(), req)
				if out.Status != focusgate.StatusSkipped || out.Reason != tt.reason {
					t.Fatalf("%s %s, want skipped %s", out.Status, out.Reason, tt.reason)
				}
				if !bytes.Equal(got, body) {
					t.Error("the skipped body did not come back as it went in")
				}
				wantModel := ""
				if want {
					wantModel = "gpt-4.1"
				}
				if out.Model != wantModel {
					t.Errorf("model %q, want %q", out.Model, wantModel)
				}
			})
		}
	}
}
