package proxy

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
)
