package detect

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
)

// longPage is the first 13 KB of the Playwright fixture, whole lines.
func longPage(tb testing.TB) string {
	tb.Helper()
	page := readFile(tb, "testdata/formats/playwright.txt")[:13000]
	return page[:strings.LastIndexByte(page, '\n')]
}

// repeatedRead is a chat request whose tool output is Claude Code's Read of
// a saved result whose one JSON line holds a page copies times: a text that
// is one long line in every wrapper but the innermost, and holds as many
// trees as copies.
func repeatedRead(tb testing.TB, page string, copies int) []byte {
	tb.Helper()
	file, err := json.Marshal([]map[string]string{{"type": "text", "text": strings.Repeat("### Page\n```yaml\n"+page+"\n```\n", copies)}})
	if err != nil {
		tb.Fatal(err)
	}
	read := numbered("[\n"+string(file[1:len(file)-1])+"\n]", "%d\t", 1)
	return mustJSON(tb, map[string]any{"model": "gpt-4.1", "messages": []any{
		map[string]any{"role": "user", "content": "Save the form."},
		map[string]any{"role": "tool", "tool_call_id": "c1", "content": read},
	}})
}

// BenchmarkFindRepeatedPage measures detection of a page repeated on one
// escaped line of a numbered read, every copy a tree: the cost per byte
// must not grow with the copies.
func BenchmarkFindRepeatedPage(b *testing.B) {
	page := longPage(b)
	for _, copies := range []int{10, 100} {
		body := repeatedRead(b, page, copies)
		b.Run(strconv.Itoa(copies), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if obs, err := Find(body, focusgate.APIChat, Options{All: true}); err != nil || len(obs) != copies {
					b.Fatalf("Find = %d observations, %v; want %d", len(obs), err, copies)
				}
			}
		})
	}
}
