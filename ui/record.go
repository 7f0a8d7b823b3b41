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

	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/prune"
)

// Record is what the gateway reports about one inspected request. The text
// fields of its observations may refer to the request's own memory: the
// dashboard copies what it keeps and drops them when capture is off.
type Record struct {
	Time   time.Time
	Route  string // "chat" or "responses"
	Model  string // the action model named in the request
	Key    string // name of the gateway key the client used; "" without client keys
	Status string // pruned, skipped or failed-open
	Reason string // why not pruned
	Mode   string
	Prompt string // the retriever prompt variant

	TokensBefore int
	TokensAfter  int
	Cache        string        // hit, miss, shared, or "" when the retriever was not consulted
	Retriever    time.Duration // longest wait for a selection
	Flagged      int           // lines removed as prompt injection

	// Priced is set when both models have a price: SavedUSD is the action
	// model's input cost avoided, RetrieverUSD what the retriever cost.
	Priced       bool
	SavedUSD     float64
	RetrieverUSD float64

	Observations []Observation
}

// Observation is one page observation of a request and what became of it.
type Observation struct {
	Format       string
	Status       string
	Reason       string
	TokensBefore int
	TokensAfter  int
	Cache        string
	Retriever    time.Duration

	Ranges  []prune.Range // the lines the retriever chose
	Kept    []prune.Range // the lines the action model received verbatim
	Flagged []int         // lines the retriever reported as prompt injection

	// Lines are the tree's elements, with offsets into Original, and
	// FocusedBID the focused element's id: the dashboard numbers lines as
	// the retriever saw them and marks the focus.
	Lines      []detect.Line
	FocusedBID string

	// Page text, kept only with capture on.
	Goal      string
	History   string
	Reasoning string
	Original  string // the observation as the agent sent it
	Forwarded string // the observation as the action model received it
}
