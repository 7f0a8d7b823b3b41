package proxy

import (
	"net/http"
)

// writeError answers with one of focusgate's own errors, in the shape of
// the API the request speaks (see speak): OpenAI's by default, where typ
// and code are the error's type and code, else the provider's own, which
// derives its type from the status.
func writeError(w http.ResponseWriter, status int, message, typ, code string) {
	p := providerOfWriter(w)
	body := p.ErrorBody(status, message, typ, code)
	h := w.Header()
	if p.ErrorHeader != nil {
		p.ErrorHeader(h, status)
	}
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
