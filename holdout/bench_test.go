package holdout

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/bench/workload"
)

// BenchmarkAssign is the work the holdout adds before a request is
// inspected: finding what identifies its conversation, and the keyed hash.
// Besides two recorded requests, it reads the load benchmark's: the
// AgentLab request with an 80k-token page, and a tool loop of 18 pages.
func BenchmarkAssign(b *testing.B) {
	bodies := map[string][]byte{}
	for name, file := range map[string]string{
		"agentlab-chat":     "../testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json",
		"claude-code-step7": "../testdata/agents/claude-code/playwright-mcp-admin/07-messages-stream.json",
	} {
		body, err := os.ReadFile(file)
		if err != nil {
			b.Fatal(err)
		}
		bodies[name] = body
	}
	tree, err := workload.NewTree("../testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json",
		"../testdata/axtrees/bgym-pr301_web_amazon_macbook.txt", 80000)
	if err != nil {
		b.Fatal(err)
	}
	bodies["agentlab-80k"] = tree.Body
	steps, err := workload.ToolLoopSteps(filepath.Join("..", workload.PagesDir))
	if err != nil {
		b.Fatal(err)
	}
	bodies["toolloop-18"] = workload.ToolLoop("gpt-4.1", steps...)
	for name, body := range bodies {
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
