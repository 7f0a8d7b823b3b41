// Package ui is focusgate's dashboard: a bounded in-memory record of recent
// requests, the aggregates of its overview, and the page and JSON endpoints
// under /ui that show them. The gateway reports each inspected request once,
// through Record; everything else happens when someone looks.
//
// Page text may hold personal data. It is kept only when capture is on, only
// in memory, within the ring's byte bound; API keys are never part of a
// Record.
package ui

import (
	"time"

	"github.com/focusgate/focusgate"
)

// Record is what the gateway reports about one inspected request. The text
// fields of its observations may refer to the request's own memory: the
// dashboard copies what it keeps and drops them when capture is off.
type Record struct {
	Time     time.Time
	Route    string // the API: "chat", "responses", "messages", "gemini" or "converse"
	Provider string // where it went: "openai", "anthropic", "gemini", "bedrock", "vertex", "azure"
	Model    string // the action model named in the request
	Key      string // name of the gateway key the client used; "" without client keys
	Status   focusgate.Status
	Reason   focusgate.Reason // why not pruned
	Mode     focusgate.Mode
	Prompt   focusgate.Variant

	TokensBefore int
	TokensAfter  int
	Cache        focusgate.CacheOutcome // hit, miss, shared, or "" when the retriever was not consulted
	Retriever    time.Duration          // longest wait for a selection
	Flagged      int                    // lines removed as prompt injection

	// Priced is set when both models have a price: SavedUSD is the action
	// model's input cost avoided, RetrieverUSD what the retriever cost.
	Priced       bool
	SavedUSD     float64
	RetrieverUSD float64

	// Relook says the newest page repeated the page the agent had just been
	// shown pruned, and went out whole. Format is the newest page's format.
	Relook bool
	Format string
	// Rescue says the request did not fit its model's context window and
	// was sent with every page pruned, and how that ended; RescuedEarly that
	// the window table foresaw it, before any refusal.
	Rescue       focusgate.Rescue
	RescuedEarly bool
	// Older counts what became of the pages before the newest.
	Older focusgate.Older

	Observations []Observation
}

// Observation is one page observation of a request and what became of it.
type Observation struct {
	Format       string
	Status       focusgate.Status
	Reason       focusgate.Reason
	TokensBefore int
	TokensAfter  int
	Cache        focusgate.CacheOutcome
	Retriever    time.Duration

	Ranges  []focusgate.Range // the lines the retriever chose
	Kept    []focusgate.Range // the lines the action model received verbatim
	Flagged []int             // lines the retriever reported as prompt injection

	// Lines are the tree's elements, with offsets into Original, and
	// FocusedBID the focused element's id: the dashboard numbers lines as
	// the retriever saw them and marks the focus.
	Lines      []focusgate.Line
	FocusedBID string

	// Page text, kept only with capture on.
	Goal      string
	History   string
	Reasoning string
	Original  string // the observation as the agent sent it
	Forwarded string // the observation as the action model received it
}

var _ focusgate.Observer = (*Dashboard)(nil)

// Observe records what the pipeline did to one request, sent with the gateway
// key named key ("" without gateway keys). It is the gateway's way in;
// Record is the dashboard's own.
func (d *Dashboard) Observe(key string, out focusgate.Outcome) {
	d.Record(recordOf(key, out))
}

// recordOf is what the dashboard reads of an outcome. It refers to the
// outcome's own strings and slices: the ring copies what it keeps.
func recordOf(key string, out focusgate.Outcome) Record {
	rec := Record{
		Route: out.API.String(), Provider: out.Provider, Model: focusgate.ClientName(out.Model), Key: key,
		Status: out.Status, Reason: out.Reason,
		Mode: out.Mode, Prompt: out.Variant,
		TokensBefore: out.TokensBefore, TokensAfter: out.TokensAfter,
		Cache: out.Cache, Retriever: out.Retriever, Flagged: out.Flagged,
		Priced: out.Priced, SavedUSD: out.SavedUSD, RetrieverUSD: out.RetrieverUSD,
		Relook: out.Relook, Rescue: out.Rescue, RescuedEarly: out.RescuedEarly, Older: out.Older,
		Observations: make([]Observation, len(out.Pages)),
	}
	if n := len(out.Pages); n > 0 {
		rec.Format = out.Pages[n-1].Format
	}
	for i, pg := range out.Pages {
		rec.Observations[i] = Observation{
			Format: pg.Format, Status: pg.Status, Reason: pg.Reason,
			TokensBefore: pg.TokensBefore, TokensAfter: pg.TokensAfter,
			Cache: pg.Cache, Retriever: pg.Retriever,
			Ranges: pg.Ranges, Kept: pg.Kept, Flagged: pg.FlaggedLines,
			Lines: pg.Lines, FocusedBID: pg.FocusedBID,
			Goal: pg.Goal, History: pg.History, Reasoning: pg.Reasoning,
			Original: pg.Original, Forwarded: pg.Forwarded,
		}
	}
	return rec
}
