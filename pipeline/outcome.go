package pipeline

import (
	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/prune"
)

// page is one observation of a request and what became of it, as the
// pipeline works with them; the Outcome reports each as a flat
// focusgate.Page (see summary).
type page struct {
	obs detect.Observation
	res prune.Result
}

// summary is what the Outcome reports of a page. It refers to the request's
// own memory, as the page does.
func summary(pg page) focusgate.Page {
	o, r := pg.obs, pg.res
	return focusgate.Page{
		Format: string(o.Format), Status: r.Status, Reason: r.Reason,
		TokensBefore: r.TokensBefore, TokensAfter: r.TokensAfter,
		Cache: r.Cache, Retriever: r.RetrieverTime, Usage: r.Usage, Flagged: r.Flagged,
		Ranges: r.Ranges, FlaggedLines: r.FlaggedLines, Kept: r.Kept,
		Lines: o.Lines, FocusedBID: o.FocusedBID,
		Goal: o.Goal, History: o.History, Reasoning: r.Reasoning,
		Original: o.Text, Forwarded: r.Text,
	}
}

func skipped(reason focusgate.Reason) focusgate.Outcome {
	return focusgate.Outcome{Status: focusgate.StatusSkipped, Reason: reason}
}

// add folds one observation's result into the request's outcome. The
// request is as pruned as its most pruned observation (pruned, then
// failed-open, then skipped, each with the first reason met), and as
// uncached as its least cached one (miss, then shared, then hit).
func add(o *focusgate.Outcome, r prune.Result) {
	if statusRank[r.Status] > statusRank[o.Status] {
		o.Status, o.Reason = r.Status, r.Reason
	}
	if cacheRank[r.Cache] > cacheRank[o.Cache] {
		o.Cache = r.Cache
	}
	o.TokensBefore += r.TokensBefore
	o.TokensAfter += r.TokensAfter
	o.Retriever = max(o.Retriever, r.RetrieverTime)
	o.Flagged += r.Flagged
	o.Usage.Add(r.Usage)
}

// addOlder folds in an observation that is not the newest and counts what
// happened to it. One re-applied from a stored selection does not hide the
// newest's failure: it turns a skipped request into a pruned one, but a
// failed-open request stays failed-open, since the newest page went out as
// it came.
func addOlder(o *focusgate.Outcome, r prune.Result) {
	reapplied := r.Status == focusgate.StatusPruned && r.Cache == focusgate.CacheHit
	switch {
	case reapplied && o.Status == focusgate.StatusFailedOpen:
		r.Status, r.Reason = focusgate.StatusSkipped, ""
	case reapplied && o.Status != focusgate.StatusPruned:
		r.Reason = ""
	}
	add(o, r)
	switch {
	case reapplied:
		o.Older.Reapplied++
	case r.Status == focusgate.StatusPruned:
		o.Older.Pruned++
	case r.Reason != focusgate.ReasonBelowMinTokens:
		o.Older.Left++
	}
}

var (
	statusRank = map[focusgate.Status]int{focusgate.StatusSkipped: 1, focusgate.StatusFailedOpen: 2, focusgate.StatusPruned: 3}
	cacheRank  = map[focusgate.CacheOutcome]int{focusgate.CacheHit: 1, focusgate.CacheShared: 2, focusgate.CacheMiss: 3}
)
