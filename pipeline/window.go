package pipeline

// bytesPerToken is how the bytes of a request outside its pages are turned
// into tokens for the context-window check: English prose and JSON run at
// about four bytes a token in every provider's tokenizer.
const bytesPerToken = 4

// blobRun is the shortest run of base64 characters counted as an embedded
// file (an image, a PDF) rather than text, and blobTokens what a provider
// charges such a file, roughly: an image is billed by its pixels, not by the
// length of its encoding, and a screenshot comes to about 1,600 tokens.
const (
	blobRun    = 1024
	blobTokens = 1600
)

// overWindow says whether a request, with its pages as pages says they go
// out, is estimated over its model's context window. A model without a known
// window is never over it: such requests are rescued only once the upstream
// refuses them.
func (p *Pipeline) overWindow(body []byte, model string, pages []page) bool {
	window, ok := p.opts.Windows.Lookup(model)
	// Every token is at least a byte: a body of no more bytes than the
	// window has tokens fits, and most requests are decided here.
	if !ok || len(body) <= window {
		return false
	}
	return estimate(body, pages) > window
}

// estimate is a request's size in tokens: its pages as counted when they
// were pruned (or not), and the rest of the body at bytesPerToken, with
// embedded files at blobTokens each.
func estimate(body []byte, pages []page) int {
	tokens, at := 0, 0
	rest := 0
	for _, pg := range pages {
		tokens += pg.res.TokensAfter
		o := pg.obs
		if o.RawStart < at {
			continue // within a span already set aside
		}
		rest += outsideText(body[at:o.RawStart], &tokens)
		at = o.RawEnd
	}
	rest += outsideText(body[at:], &tokens)
	return tokens + rest/bytesPerToken
}

// outsideText returns how many bytes of b are text, adding blobTokens to
// tokens for each embedded file it holds.
func outsideText(b []byte, tokens *int) int {
	text, run := 0, 0
	end := func() {
		if run >= blobRun {
			*tokens += blobTokens
		} else {
			text += run
		}
		run = 0
	}
	for _, c := range b {
		if base64Char(c) {
			run++
			continue
		}
		end()
		text++
	}
	end()
	return text
}

func base64Char(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '='
}
