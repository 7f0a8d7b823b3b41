package pipeline_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/bench/workload"
)

// A held-out request goes as it came, with no retriever call and nothing
// re-applied; it is only read for the comparison: its model, and whether its
// newest page repeats the page before it, as for a pruned request.
func TestHeldOutRequestsAreOnlyRead(t *testing.T) {
	laptop := readPage(t, "bgym-pr301_workarena_standard_laptop_form.txt")
	ipad := readPage(t, "bgym-pr301_workarena_ipad_pro_form.txt")
	p := newGoldenPipeline()
	tests := []struct {
		name     string
		steps    [][2]string
		repeated bool
	}{
		{"one page", [][2]string{{"snapshot", laptop}}, false},
		{"a new page", [][2]string{{"snapshot", laptop}, {"click", ipad}}, false},
		{"the same page again", [][2]string{{"snapshot", laptop}, {"click", ipad}, {"snapshot", ipad}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := workload.ToolLoop("gpt-4.1", tt.steps...)
			for _, held := range []bool{true, false} {
				got, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: body, Holdout: held})
				if out.Repeated != tt.repeated {
					t.Errorf("held out %v: repeated %v, want %v", held, out.Repeated, tt.repeated)
				}
				if !held {
					continue
				}
				if !bytes.Equal(got, body) {
					t.Error("a held-out body was changed")
				}
				if out.Status != focusgate.StatusSkipped || out.Reason != focusgate.ReasonHoldout || out.Model != "gpt-4.1" || out.Usage.PromptTokens != 0 || len(out.Pages) != 0 {
					t.Errorf("outcome %s %s, model %q, retriever tokens %d, %d pages; want skipped holdout, gpt-4.1, none, none",
						out.Status, out.Reason, out.Model, out.Usage.PromptTokens, len(out.Pages))
				}
			}
		})
	}
}
