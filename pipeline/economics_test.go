package pipeline_test

import (
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/pipeline"
	"github.com/focusgate/focusgate/prune"
)

// Pruning pays only when it removes more than the retriever/action price
// ratio; a pair that cannot pay is skipped without asking the retriever.
func TestUneconomicPairsAreSkipped(t *testing.T) {
	body := readFile(t, laptopRequest) // the action model is gpt-4.1, $2 per million input tokens
	tests := []struct {
		name, retriever string
		skip            bool
		prompt          string
		status          focusgate.Status
		reason          focusgate.Reason
	}{
		{"as dear as the action model", "gpt-4.1", true, "", focusgate.StatusSkipped, focusgate.ReasonUneconomic},
		{"dearer than the action model", "gpt-4o", true, "", focusgate.StatusSkipped, focusgate.ReasonUneconomic},
		{"a fifth of the price", "gpt-4.1-mini", true, "", focusgate.StatusPruned, ""},
		{"unknown price", "my-local-model", true, "", focusgate.StatusPruned, ""},
		{"defender prompt prunes anyway", "gpt-4.1", true, "defender", focusgate.StatusPruned, ""},
		{"gate turned off", "gpt-4.1", false, "", focusgate.StatusPruned, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newRetriever(t, keep("[a237] combobox"))
			pr := retrieverPruner(rt, tt.retriever, cache.NewMemory(1<<20, time.Hour), func(c *prune.Config, _ *prune.RetrieverConfig) { c.UseHistory = false })
			p := retrieverPipeline(pr, func(o *pipeline.Options) {
				o.RetrieverModel = tt.retriever
				o.SkipUneconomic, o.ExpectedReduction = tt.skip, 0.5
			})
			_, out := rewrite(p, focusgate.Request{API: focusgate.APIChat, Body: body, Prompt: tt.prompt})
			if out.Status != tt.status || out.Reason != tt.reason {
				t.Errorf("%s %s, want %s %s", out.Status, out.Reason, tt.status, tt.reason)
			}
			if calls := len(rt.Calls()); (calls == 0) != (tt.status != focusgate.StatusPruned) {
				t.Errorf("retriever called %d times", calls)
			}
		})
	}
}
