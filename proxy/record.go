package proxy

import (
	"context"
	"net/http"
	"time"

	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/ui"
)

// Dashboard serves /ui and receives one report per inspected request;
// *ui.Dashboard is the implementation. Record is called on the request's
// path and must return at once.
type Dashboard interface {
	http.Handler
	Record(ui.Record)
}

// record reports out to the dashboard, if there is one. It hands over the
// request's own strings and slices: the dashboard copies what it keeps.
func (s *Server) record(ctx context.Context, kind detect.API, out outcome) {
	if s.opts.Dashboard == nil {
		return
	}
	rec := ui.Record{
		Time:  time.Now(),
		Route: routeName(kind), Model: out.Model,
		Status: string(out.Status), Reason: out.Reason,
		Mode: string(out.Mode), Prompt: string(out.Variant),
		TokensBefore: out.TokensBefore, TokensAfter: out.TokensAfter,
		Cache: string(out.Cache), Retriever: out.Retriever, Flagged: out.Flagged,
		Priced: out.Priced, SavedUSD: out.SavedUSD, RetrieverUSD: out.RetrieverUSD,
	}
	if s.opts.Keys != nil {
		rec.Key = keyName(ctx)
	}
	if len(out.found) == len(out.Results) {
		rec.Observations = make([]ui.Observation, len(out.Results))
		for i, r := range out.Results {
			o := out.found[i]
			rec.Observations[i] = ui.Observation{
				Format: string(o.Format), Status: string(r.Status), Reason: r.Reason,
				TokensBefore: r.TokensBefore, TokensAfter: r.TokensAfter,
				Cache: string(r.Cache), Retriever: r.RetrieverTime,
				Ranges: r.Ranges, Kept: r.Kept, Flagged: r.FlaggedLines,
				Lines: o.Lines, FocusedBID: o.FocusedBID,
				Goal: o.Goal, History: o.History, Reasoning: r.Reasoning,
				Original: o.Text, Forwarded: r.Text,
			}
		}
	}
	s.opts.Dashboard.Record(rec)
}

func routeName(kind detect.API) string {
	if kind == detect.Responses {
		return "responses"
	}
	return "chat"
}
