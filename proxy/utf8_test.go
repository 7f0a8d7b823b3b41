package proxy_test

import (
	"bytes"
	"testing"

	"github.com/focusgate/focusgate/proxy"
)

// Lines focusgate keeps reach the action model byte for byte, even when the
// agent sent invalid UTF-8 or a lone surrogate escape in them.
func TestKeptLinesWithBrokenTextArriveByteForByte(t *testing.T) {
	for _, broken := range []string{"\xff\xfe", `\ud83d`, `\udc00 and \ud800`} {
		t.Run(broken, func(t *testing.T) {
			rt := newRetriever(t, keep("[a237] combobox"))
			gw := pruningGateway(t, rt)
			line := []byte("[a237] combobox 'Quantity" + broken + "' value='1'")
			body := bytes.Replace(readFile(t, laptopRequest), []byte("[a237] combobox 'Quantity' value='1'"), line, 1)

			resp := post(t, gw.URL+"/v1/chat/completions", body, nil)
			if got := resp.Header.Get(proxy.HeaderStatus); got != "pruned" {
				t.Fatalf("%s = %q, want pruned", proxy.HeaderStatus, got)
			}
			if sent := gw.upstream.last(t).Body; !bytes.Contains(sent, line) {
				t.Errorf("the kept line did not arrive as it was sent: want %q in the pruned body", line)
			}
		})
	}
}
