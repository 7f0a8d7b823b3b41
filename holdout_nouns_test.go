package focusgate_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/focusgate/focusgate"
)

// A name a client chose is kept and logged at most MaxNameBytes long, cut
// on a character, and two long names that differ only at their end stay
// apart; a short name is kept as it is.
func TestClientName(t *testing.T) {
	if got := focusgate.ClientName("gpt-4.1"); got != "gpt-4.1" {
		t.Errorf("a short name became %q", got)
	}
	base := strings.Repeat("é", 1<<19) // 1 MB of two-byte characters
	a, b := focusgate.ClientName(base+"a"), focusgate.ClientName(base+"b")
	for _, n := range []string{a, b} {
		if len(n) > focusgate.MaxNameBytes || !utf8.ValidString(n) || !strings.HasPrefix(n, "éé") {
			t.Errorf("cut to %q (%d bytes): want at most %d bytes of whole characters, its start kept", n, len(n), focusgate.MaxNameBytes)
		}
	}
	if a == b {
		t.Errorf("two long names became one: %q", a)
	}
	// The access log's model field is cut too.
	for _, attr := range (focusgate.Outcome{Model: base}).LogAttrs() {
		if attr.Key == "model" && len(attr.Value.String()) > focusgate.MaxNameBytes {
			t.Errorf("the log line's model is %d bytes", len(attr.Value.String()))
		}
	}
}
