package ui

import (
	"time"

	"github.com/focusgate/focusgate"
)

// RequestSummary is one row of the recent requests table.
type RequestSummary struct {
	ID           uint64                 `json:"id"`
	Time         time.Time              `json:"time"`
	Route        string                 `json:"route"`
	Provider     string                 `json:"provider"`
	Model        string                 `json:"model"`
	Key          string                 `json:"key"`
	Status       focusgate.Status       `json:"status"`
	Reason       focusgate.Reason       `json:"reason"`
	Observations int                    `json:"observations"`
	TokensBefore int                    `json:"tokens_before"`
	TokensAfter  int                    `json:"tokens_after"`
	Cache        focusgate.CacheOutcome `json:"cache"`
	RetrieverMs  int64                  `json:"retriever_ms"`
	Flagged      int                    `json:"flagged"`
	Priced       bool                   `json:"priced"`
	NetUSD       float64                `json:"net_usd"`
	// What else happened to the request, shown beside its status: a
	// request pruned whole because it did not fit its model's context
	// window, and how that ended ("rescued", "still-too-long",
	// "nothing-to-prune"; "" for every other request), and whether the
	// window table foresaw it before the upstream refused; a re-look, whose
	// newest page went whole after a pruned look at the same page.
	Rescue       focusgate.Rescue `json:"rescue"`
	RescuedEarly bool             `json:"rescued_early"`
	Relook       bool             `json:"relook"`
}

func (e *entry) summary() RequestSummary {
	r := &e.rec
	return RequestSummary{
		ID: e.ID, Time: r.Time, Route: r.Route, Provider: r.Provider, Model: r.Model, Key: r.Key, Status: r.Status, Reason: r.Reason,
		Observations: len(e.obs), TokensBefore: r.TokensBefore, TokensAfter: r.TokensAfter, Cache: r.Cache,
		RetrieverMs: r.Retriever.Milliseconds(), Flagged: r.Flagged, Priced: r.Priced,
		NetUSD: r.SavedUSD - r.RetrieverUSD,
		Rescue: r.Rescue, RescuedEarly: r.RescuedEarly, Relook: r.Relook,
	}
}

// RequestDetail is one request's page.
type RequestDetail struct {
	RequestSummary
	Mode         focusgate.Mode    `json:"mode"`
	Prompt       focusgate.Variant `json:"prompt"`
	SavedUSD     float64           `json:"saved_usd"`
	RetrieverUSD float64           `json:"retriever_usd"`
	// Captured says whether page text was kept for this request;
	// TextDropped that it was, but did not fit in the ring's byte bound.
	Captured    bool `json:"captured"`
	TextDropped bool `json:"text_dropped"`
	// Older counts what became of the pages before the newest.
	Older OlderView         `json:"older"`
	Pages []ObservationView `json:"pages"`
}

// OlderView counts the pages of a request before its newest: pruned again
// from the selection stored when each was the newest, pruned with a new
// selection (FOCUSGATE_PRUNE_ALL), or forwarded as they came.
type OlderView struct {
	Reapplied int `json:"reapplied"`
	Pruned    int `json:"pruned"`
	Left      int `json:"left"`
}

// LineRange is an inclusive range of an observation's line numbers, counted
// from 1 as the retriever saw them. The API has its own type, rather than
// focusgate.Range, so that its keys are snake_case like every other key.
type LineRange struct {
	From int `json:"from"`
	To   int `json:"to"`
}

func lineRanges(rs []focusgate.Range) []LineRange {
	out := make([]LineRange, len(rs))
	for i, r := range rs {
		out[i] = LineRange{From: r.From, To: r.To}
	}
	return out
}

// ObservationView is one observation of a request as the detail view shows
// it. The text fields are empty unless page text was captured.
type ObservationView struct {
	Format       string                 `json:"format"`
	Status       focusgate.Status       `json:"status"`
	Reason       focusgate.Reason       `json:"reason"`
	TokensBefore int                    `json:"tokens_before"`
	TokensAfter  int                    `json:"tokens_after"`
	Cache        focusgate.CacheOutcome `json:"cache"`
	RetrieverMs  int64                  `json:"retriever_ms"`
	Lines        int                    `json:"lines"`
	FocusedLine  int                    `json:"focused_line"`
	Ranges       []LineRange            `json:"ranges"`
	Kept         []LineRange            `json:"kept"`
	Flagged      []int                  `json:"flagged"`
	Segments     []Segment              `json:"segments"`

	Goal      string `json:"goal"`
	History   string `json:"history"`
	Reasoning string `json:"reasoning"`
	Forwarded string `json:"forwarded"`
}

// Segment is a run of lines of the original observation that met the same
// fate: kept (the action model read them), pruned (removed or reduced to a
// stub or marker) or flagged (removed as prompt injection). Text holds the
// lines when page text was captured.
type Segment struct {
	Kind string   `json:"kind"`
	From int      `json:"from"`
	To   int      `json:"to"`
	Text []string `json:"text,omitempty"`
}

func (e *entry) detail(capture bool) RequestDetail {
	d := RequestDetail{
		RequestSummary: e.summary(),
		Mode:           e.rec.Mode, Prompt: e.rec.Prompt,
		SavedUSD: e.rec.SavedUSD, RetrieverUSD: e.rec.RetrieverUSD,
		Captured: capture && !e.textDropped, TextDropped: e.textDropped,
		Older: OlderView{Reapplied: e.rec.Older.Reapplied, Pruned: e.rec.Older.Pruned, Left: e.rec.Older.Left},
		Pages: make([]ObservationView, len(e.obs)),
	}
	for i := range e.obs {
		o := &e.obs[i]
		d.Pages[i] = ObservationView{
			Format: o.Format, Status: o.Status, Reason: o.Reason,
			TokensBefore: o.TokensBefore, TokensAfter: o.TokensAfter, Cache: o.Cache,
			RetrieverMs: o.Retriever.Milliseconds(), Lines: o.lineCount, FocusedLine: o.focusedLine,
			Ranges: lineRanges(o.Ranges), Kept: lineRanges(o.Kept), Flagged: nonNil(o.Flagged),
			Segments: o.segments(),
			Goal:     o.Goal, History: o.History, Reasoning: o.Reasoning, Forwarded: o.Forwarded,
		}
	}
	return d
}

// segments splits the observation's lines into kept, pruned and flagged
// runs. Only a pruned observation lost lines; any other reached the action
// model whole.
func (o *storedObs) segments() []Segment {
	n := o.lineCount
	if n == 0 {
		return []Segment{}
	}
	kinds := make([]string, n)
	for i := range kinds {
		kinds[i] = "kept"
	}
	if o.Status == "pruned" {
		for i := range kinds {
			kinds[i] = "pruned"
		}
		for _, r := range o.Kept {
			for l := max(r.From, 1); l <= min(r.To, n); l++ {
				kinds[l-1] = "kept"
			}
		}
		for _, l := range o.Flagged {
			if l >= 1 && l <= n {
				kinds[l-1] = "flagged"
			}
		}
	}
	var segs []Segment
	for i, k := range kinds {
		if len(segs) == 0 || segs[len(segs)-1].Kind != k {
			segs = append(segs, Segment{Kind: k, From: i + 1, To: i + 1})
		} else {
			segs[len(segs)-1].To = i + 1
		}
		if len(o.spans) == n {
			s := &segs[len(segs)-1]
			s.Text = append(s.Text, o.Original[o.spans[i].start:o.spans[i].end])
		}
	}
	return segs
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
