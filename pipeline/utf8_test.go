package pipeline_test

import (
	"bytes"
	"testing"

	"github.com/focusgate/focusgate"
)

// Lines focusgate keeps are forwarded byte for byte, even when the agent
// sent invalid UTF-8 or a lone surrogate escape in them.
func TestKeptLinesWithBrokenTextArriveByteForByte(t *testing.T) {
	for _, broken := range []string{"\xff\xfe", `\ud83d`, `\udc00 and \ud800`} {
		t.Run(broken, func(t *testing.T) {
			rt := newRetriever(t, keep("[a237] combobox"))
			line := []byte("[a237] combobox 'Quantity" + broken + "' value='1'")
			body := bytes.Replace(readFile(t, laptopRequest), []byte("[a237] combobox 'Quantity' value='1'"), line, 1)

			sent, out := rewrite(pruningPipeline(rt), chat(body))
			if out.Status != focusgate.StatusPruned {
				t.Fatalf("%s %s, want pruned", out.Status, out.Reason)
			}
			if !bytes.Contains(sent, line) {
				t.Errorf("the kept line did not arrive as it was sent: want %q in the pruned body", line)
			}
		})
	}
}
