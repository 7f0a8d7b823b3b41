package holdout

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/focusgate/focusgate"
)

// Each conversation that ended is counted by arm, and its steps, input
// tokens and dollars observed; dollars only when priced.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	h := New(Options{Share: 0.5})
	RegisterOpen(reg, h)
	h.Record(h.Assign(focusgate.Request{API: focusgate.APIChat, Body: chatBody(1, "")}), focusgate.Step{Model: "m", Status: 200})
	m.End(Conversation{Arm: focusgate.ArmPruned, Steps: 4, InputTokens: 5000, USD: 0.02, Priced: true, Errors: 1, RepeatSteps: 2})
	m.End(Conversation{Arm: focusgate.ArmHoldout, Steps: 6, InputTokens: 9000})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			key := mf.GetName()
			if len(s.GetLabel()) > 0 {
				key += "{" + s.GetLabel()[0].GetValue() + "}"
			}
			switch {
			case s.GetGauge() != nil:
				got[key] = s.GetGauge().GetValue()
			case s.GetCounter() != nil:
				got[key] = s.GetCounter().GetValue()
			case s.GetHistogram() != nil:
				got[key+"count"] = float64(s.GetHistogram().GetSampleCount())
				got[key+"sum"] = s.GetHistogram().GetSampleSum()
			}
		}
	}
	for key, want := range map[string]float64{
		"focusgate_conversations_total{pruned}":                 1,
		"focusgate_conversations_total{holdout}":                1,
		"focusgate_conversation_steps{pruned}sum":               4,
		"focusgate_conversation_steps{holdout}sum":              6,
		"focusgate_conversation_input_tokens{holdout}sum":       9000,
		"focusgate_conversation_usd{pruned}count":               1,
		"focusgate_conversation_usd{holdout}count":              0,
		"focusgate_conversation_upstream_errors_total{pruned}":  1,
		"focusgate_conversation_repeat_steps_total{pruned}":     2,
		"focusgate_conversation_repeat_steps_total{holdout}":    0,
		"focusgate_conversation_upstream_errors_total{holdout}": 0,
		"focusgate_conversation_input_tokens{pruned}count":      1,
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
}
