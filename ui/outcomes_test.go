package ui_test

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/holdout"
	"github.com/focusgate/focusgate/ui"
)

// A request's secondary outcomes (a context rescue and how it ended,
// whether it was foreseen, a re-look, what became of its older pages) are in
// the list and on the request's page, beside its status.
func TestRequestsCarryTheirSecondaryOutcomes(t *testing.T) {
	d := ui.New(ui.Options{})
	rescued := pageRecord()
	rescued.Rescue, rescued.RescuedEarly = focusgate.RescueRescued, true
	rescued.Older = focusgate.Older{Reapplied: 3, Left: 1}
	relook := ui.Record{Model: "gpt-4.1", Status: focusgate.StatusPruned, Relook: true, Older: focusgate.Older{Reapplied: 2}}
	refused := ui.Record{Model: "claude-sonnet-4-5", Status: focusgate.StatusPruned, Rescue: focusgate.RescueStillTooLong}
	plain := ui.Record{Model: "gpt-4.1", Status: focusgate.StatusSkipped, Reason: focusgate.ReasonNoObservation}
	for _, r := range []ui.Record{rescued, relook, refused, plain} {
		d.Record(r)
	}

	var list struct{ Requests []ui.RequestSummary }
	decode(t, d, "/ui/api/requests", &list)
	type also struct {
		rescue        focusgate.Rescue
		early, relook bool
	}
	want := map[uint64]also{1: {focusgate.RescueRescued, true, false}, 2: {"", false, true}, 3: {focusgate.RescueStillTooLong, false, false}, 4: {}}
	for _, r := range list.Requests {
		if got := (also{r.Rescue, r.RescuedEarly, r.Relook}); got != want[r.ID] {
			t.Errorf("request %d in the list: %+v, want %+v", r.ID, got, want[r.ID])
		}
	}
	for _, c := range []struct {
		id    string
		also  also
		older ui.OlderView
	}{
		{"1", want[1], ui.OlderView{Reapplied: 3, Left: 1}},
		{"2", want[2], ui.OlderView{Reapplied: 2}},
		{"4", want[4], ui.OlderView{}},
	} {
		var det ui.RequestDetail
		decode(t, d, "/ui/api/requests/"+c.id, &det)
		if got := (also{det.Rescue, det.RescuedEarly, det.Relook}); got != c.also || det.Older != c.older {
			t.Errorf("request %s: %+v, older %+v; want %+v, older %+v", c.id, got, det.Older, c.also, c.older)
		}
	}
}

// Every key of the JSON API is snake_case, the line ranges' included.
func TestAPIKeysAreSnakeCase(t *testing.T) {
	tally := holdout.NewTally(0.05)
	for i, arm := range []focusgate.Arm{focusgate.ArmPruned, focusgate.ArmPruned, focusgate.ArmHoldout, focusgate.ArmHoldout} {
		tally.End(holdout.Conversation{Arm: arm, Model: "gpt-4.1", Agent: "claude-cli", Steps: 2 + i, InputTokens: 1000 * (i + 1)})
	}
	d := ui.New(ui.Options{Holdout: tally, Capture: true})
	rec := pageRecord()
	rec.Key, rec.Format, rec.Rescue = "alice", "browsergym", focusgate.RescueRescued
	d.Record(rec)

	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if !snake.MatchString(k) {
					t.Errorf("%s: key %q is not snake_case", path, k)
				}
				walk(path+"."+k, x)
			}
		case []any:
			for _, x := range v {
				walk(path+"[]", x)
			}
		}
	}
	for _, path := range []string{"/ui/api/overview", "/ui/api/requests", "/ui/api/requests/1", "/ui/api/requests/99"} {
		resp := get(t, d, path, "127.0.0.1:1", nil)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%s: %s", path, resp.Status)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		walk(path, v)
	}
	var det struct {
		Pages []struct {
			Ranges []map[string]int `json:"ranges"`
		} `json:"pages"`
	}
	decode(t, d, "/ui/api/requests/1", &det)
	if got := mustJSON(det.Pages[0].Ranges); got != `[{"from":1,"to":2}]` {
		t.Errorf("ranges %s, want [{\"from\":1,\"to\":2}]", got)
	}
}
