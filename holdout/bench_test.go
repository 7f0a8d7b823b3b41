package holdout

import (
	"os"
	"testing"

	"github.com/focusgate/focusgate"
)

// BenchmarkAssign is the work the holdout adds before a request is
// inspected: finding what identifies its conversation, and the keyed hash.
func BenchmarkAssign(b *testing.B) {
	for name, file := range map[string]string{
		"agentlab-chat":     "../testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json",
		"claude-code-step7": "../testdata/agents/claude-code/playwright-mcp-admin/07-messages-stream.json",
	} {
		body, err := os.ReadFile(file)
		if err != nil {
			b.Fatal(err)
		}
		api := focusgate.APIChat
		if name == "claude-code-step7" {
			api = focusgate.APIMessages
		}
		h := New(Options{Share: 0.05})
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if !h.Assign(focusgate.Request{API: api, Body: body}).OK {
					b.Fatal("no conversation")
				}
			}
		})
	}
}
