package detect

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
)

const benchBodyBytes = 1 << 20

// benchConversation builds a chat request of at least 1 MB from real trees: a
// browsing conversation whose every tool result is a recorded page.
func benchConversation(b *testing.B) []byte {
	b.Helper()
	traces := readTraces(b)
	msgs := []message{
		{Role: "system", Content: "You are a web agent. Every tool result is the page as an accessibility tree; answer with one action."},
		{Role: "user", Content: "Go to the hardware store and order 10 \"Standard Laptop\"."},
	}
	size := 0
	for i := 0; size < benchBodyBytes; i++ {
		tr := traces[i%len(traces)]
		msgs = append(msgs,
			message{Role: "assistant", Content: "click('" + tr.TargetID + "')"},
			message{Role: "tool", Content: "[Current URL: https://dev.service-now.example/]\n\n" + tr.AXTree})
		size += len(tr.AXTree)
	}
	return chatBody(b, msgs...)
}

// benchProse is a request of at least 1 MB without any tree.
func benchProse(b *testing.B) []byte {
	b.Helper()
	files, err := filepath.Glob("testdata/negative/*")
	if err != nil {
		b.Fatal(err)
	}
	var msgs []message
	for size := 0; size < benchBodyBytes; {
		for _, f := range files {
			text := readFile(b, f)
			msgs = append(msgs, message{Role: "user", Content: text}, message{Role: "assistant", Content: "Noted."})
			size += len(text)
		}
	}
	return chatBody(b, msgs...)
}

// BenchmarkNoPage measures detection on a request that holds no page but
// reads like one at first sight: 15 KB of markdown notes, 267 "- " list
// items (the line grammar of Playwright's snapshots) and dozens of "[#1234]"
// links and "[x]" boxes (which look like element ids), the kind of chat
// request that passes the gateway untouched. MayHoldPage turns it away, as
// the pipeline does before Find; Find runs without and with the Finder's
// memory the gateway keeps, the request sent once or again.
func BenchmarkNoPage(b *testing.B) {
	body := chatBody(b,
		message{Role: "system", Content: "You are a helpful project assistant."},
		message{Role: "user", Content: "Summarise what is still open, by owner.\n\n" + readFile(b, "testdata/negative/sprint_notes.md")})
	b.Run("may-hold-page", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if MayHoldPage(body) {
				b.Fatal("MayHoldPage = true; the notes hold no element id")
			}
		}
	})
	for _, bc := range []struct {
		name   string
		finder func() *Finder
	}{
		{"find", func() *Finder { return nil }},
		{"finder-repeated", func() *Finder { return NewFinder(16 << 20) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f := bc.finder()
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if obs, err := f.Find(body, focusgate.APIChat, Options{All: true}); err != nil || len(obs) != 0 {
					b.Fatalf("Find = %d observations, %v; want none", len(obs), err)
				}
			}
		})
	}
}

func BenchmarkFind(b *testing.B) {
	conversation, prose := benchConversation(b), benchProse(b)
	single := genericAgentBody(b, "Buy the MacBook", strings.TrimSpace(readFile(b, filepath.Join(sharedAXTrees, "bgym-pr301_web_amazon_macbook.txt"))), "None", "")
	for _, bc := range []struct {
		name string
		body []byte
		opts Options
	}{
		{"conversation-1MB/newest", conversation, Options{}},
		{"conversation-1MB/all", conversation, Options{All: true}},
		{"prose-1MB", prose, Options{}},
		{"genericagent-175KB-tree", single, Options{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			obs, err := Find(bc.body, focusgate.APIChat, bc.opts)
			if err != nil || len(obs) == 0 && bc.name != "prose-1MB" {
				b.Fatalf("Find = %d observations, %v", len(obs), err)
			}
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Find(bc.body, focusgate.APIChat, bc.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBlocks measures the line grammars alone on 1 MB of real trees.
func BenchmarkBlocks(b *testing.B) {
	var sb strings.Builder
	for i, traces := 0, readTraces(b); sb.Len() < benchBodyBytes; i++ {
		sb.WriteString("Page:\n" + traces[i%len(traces)].AXTree + "\n\n")
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		Blocks(text)
	}
}

// BenchmarkQuickModel reads the model of a 16 KB chat body that holds no
// page, named first (Claude Code, Codex, the Node SDKs) and after the
// conversation (the Python SDKs of OpenAI and Anthropic, Stagehand).
func BenchmarkQuickModel(b *testing.B) {
	conversation := `"messages":[{"role":"user","content":"` + strings.Repeat("The service forwards every request. ", 450) + `"}]`
	for _, tc := range []struct{ name, body string }{
		{"named-first", `{"model":"gpt-4.1",` + conversation + `,"temperature":0}`},
		{"named-last", `{` + conversation + `,"temperature":0,"model":"gpt-4.1"}`},
	} {
		body := []byte(tc.body)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if QuickModel(body) != "gpt-4.1" {
					b.Fatal("the model was not read")
				}
			}
		})
	}
}
