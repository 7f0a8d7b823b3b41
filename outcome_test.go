package focusgate_test

import (
	"math"
	"testing"

	"github.com/focusgate/focusgate"
)

// A rescue's two attempts were both paid for: whichever answer reaches the
// client, the retriever's spending of both is counted, and a refusal that
// reaches the client saved nothing.
func TestRescueOutcomesCountBothAttempts(t *testing.T) {
	first := focusgate.Outcome{Status: focusgate.StatusPruned, SavedUSD: 0.02, RetrieverUSD: 0.001,
		Usage: focusgate.RetrieverUsage{PromptTokens: 1000, CompletionTokens: 10}}
	retry := focusgate.Outcome{Status: focusgate.StatusPruned, Rescue: focusgate.RescueRescued, SavedUSD: 0.05, RetrieverUSD: 0.003,
		Usage: focusgate.RetrieverUsage{PromptTokens: 3000, CompletionTokens: 30}}
	both := focusgate.RetrieverUsage{PromptTokens: 4000, CompletionTokens: 40}

	tests := []struct {
		name         string
		got          focusgate.Outcome
		rescue       focusgate.Rescue
		saved        float64
		usage        focusgate.RetrieverUsage
		retrieverUSD float64
	}{
		{"the retry was taken", retry.Retried(first), focusgate.RescueRescued, 0.05, both, 0.004},
		{"the retry was refused too", first.Refused(focusgate.RescueStillTooLong, retry), focusgate.RescueStillTooLong, 0, both, 0.004},
		{"nothing was left to prune", first.Refused(focusgate.RescueNothingToPrune, focusgate.Outcome{}), focusgate.RescueNothingToPrune, 0, first.Usage, 0.001},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if o := tt.got; o.Rescue != tt.rescue || o.SavedUSD != tt.saved || o.Usage != tt.usage || math.Abs(o.RetrieverUSD-tt.retrieverUSD) > 1e-12 {
				t.Errorf("rescue %q, saved $%v, usage %+v, retriever $%v; want %q, $%v, %+v, $%v",
					o.Rescue, o.SavedUSD, o.Usage, o.RetrieverUSD, tt.rescue, tt.saved, tt.usage, tt.retrieverUSD)
			}
		})
	}
}
