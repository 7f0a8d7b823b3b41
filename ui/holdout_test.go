package ui_test

import (
	"encoding/json"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/holdout"
	"github.com/focusgate/focusgate/ui"
)

// The overview carries the holdout's comparison when there is a holdout,
// and says nothing of one otherwise.
func TestOverviewCarriesTheHoldout(t *testing.T) {
	tally := holdout.NewTally(0.05)
	for i, arm := range []focusgate.Arm{focusgate.ArmPruned, focusgate.ArmPruned, focusgate.ArmHoldout, focusgate.ArmHoldout} {
		tally.End(holdout.Conversation{Arm: arm, Steps: 2 + i, InputTokens: 1000 * (i + 1)})
	}
	for _, tt := range []struct {
		name string
		opts ui.Options
		want bool
	}{
		{"with a holdout", ui.Options{Holdout: tally}, true},
		{"without", ui.Options{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := get(t, ui.New(tt.opts), "/ui/api/overview", "127.0.0.1:5000", nil)
			var o struct {
				Holdout *focusgate.HoldoutReport `json:"holdout"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
				t.Fatal(err)
			}
			if (o.Holdout != nil) != tt.want {
				t.Fatalf("holdout in the overview: %v, want %v", o.Holdout != nil, tt.want)
			}
			if tt.want && (o.Holdout.Share != 0.05 || o.Holdout.Arms[0].Conversations != 2 || o.Holdout.Arms[1].Steps != 9 || len(o.Holdout.Metrics) == 0) {
				t.Errorf("holdout %+v", o.Holdout)
			}
		})
	}
}
