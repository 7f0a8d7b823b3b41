package proxy_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/focusgate/focusgate/proxy"
)

// Request bodies are read into buffers that are reused, and poisoned in
// these tests as they go back to their pool. A page the gateway remembers
// from an earlier request (the strings detection searched, the pruned
// result) must then be a copy, not a view of a buffer since reused: the
// same request sent again, with others of its size between, goes upstream
// as it did the first time.
func TestARequestSentAgainAfterItsBufferWasReusedGoesOutAlike(t *testing.T) {
	rt := newRetriever(t, keep("[a237] combobox", "[a203] textbox"))
	gw := pruningGateway(t, rt)
	laptop := readFile(t, laptopRequest)
	// Another request of the laptop's size class, whose bytes differ.
	other := bytes.Replace(laptop, []byte("laptop"), []byte("LAPTOP"), -1)

	var first []byte
	for i, body := range [][]byte{laptop, other, laptop, other, laptop} {
		resp := post(t, gw.URL+"/v1/chat/completions", body, nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get(proxy.HeaderStatus) != "pruned" {
			t.Fatalf("request %d: status %d, %s %q; want 200, pruned", i+1, resp.StatusCode, proxy.HeaderStatus, resp.Header.Get(proxy.HeaderStatus))
		}
		readBody(t, resp)
		sent := gw.upstream.last(t).Body
		switch {
		case i == 0:
			first = sent
		case &body[0] == &laptop[0] && !bytes.Equal(sent, first):
			t.Errorf("request %d: the laptop request went upstream as %d bytes, not as the %d it went the first time", i+1, len(sent), len(first))
		}
	}
}
