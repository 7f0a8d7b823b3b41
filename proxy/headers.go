package proxy

import (
	"net/http"
	"strconv"

	"github.com/focusgate/focusgate"
)

// Headers focusgate reads on requests (and strips before forwarding) and adds
// to responses. Their names are part of the public contract.
const (
	HeaderMode         = "X-Focusgate-Mode"
	HeaderPrompt       = "X-Focusgate-Prompt"
	HeaderStatus       = "X-Focusgate-Status"
	HeaderTokensBefore = "X-Focusgate-Tokens-Before"
	HeaderTokensAfter  = "X-Focusgate-Tokens-After"
	HeaderCache        = "X-Focusgate-Cache"
	HeaderRetrieverMs  = "X-Focusgate-Retriever-Ms"
	HeaderFlaggedLines = "X-Focusgate-Flagged-Lines"
	HeaderSavedUSD     = "X-Focusgate-Saved-USD"
)

// setHeaders reports the outcome to the client. The status carries its
// reason as a parameter: "skipped; reason=below-min-tokens", except the
// holdout's.
func setHeaders(h http.Header, o focusgate.Outcome) {
	if o.Status == "" {
		return
	}
	status := string(o.Status)
	// A held-out request says only "skipped": a client that read its arm
	// could retry until it lands in the one it prefers (the log, metrics
	// and dashboard still say holdout).
	if o.Reason != "" && o.Reason != focusgate.ReasonHoldout {
		status += "; reason=" + string(o.Reason)
	}
	if o.Rescue != "" {
		status += "; rescue=" + string(o.Rescue)
	}
	h.Set(HeaderStatus, status)
	if len(o.Pages) > 0 {
		h.Set(HeaderTokensBefore, strconv.Itoa(o.TokensBefore))
		h.Set(HeaderTokensAfter, strconv.Itoa(o.TokensAfter))
	}
	if o.Cache != "" {
		h.Set(HeaderCache, string(o.Cache))
		h.Set(HeaderRetrieverMs, strconv.FormatInt(o.Retriever.Milliseconds(), 10))
	}
	if o.Flagged > 0 {
		h.Set(HeaderFlaggedLines, strconv.Itoa(o.Flagged))
	}
	if o.Priced && len(o.Pages) > 0 {
		h.Set(HeaderSavedUSD, strconv.FormatFloat(o.SavedUSD-o.RetrieverUSD, 'f', 6, 64))
	}
}
