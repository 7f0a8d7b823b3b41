package detect

import (
	"encoding/json"
	"runtime"
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

// allocated returns the allocations and bytes f allocates, counted by the
// runtime: a measure of work that a busy machine does not change.
func allocated(f func()) (mallocs, bytes uint64) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc
}

// Issue 36: peeling a page repeated on one long line cost the square of
// the line, each copy's tree mapping its span over the whole line again. A
// text ten times longer, with ten times the trees, must cost about ten times
// as much: counted in allocations and in bytes allocated, which grew a
// hundredfold before.
func TestPeelingIsLinearOnOneLongLine(t *testing.T) {
	page := longPage(t)
	const small, large = 20, 200
	var mallocs, bytes [2]uint64
	for i, copies := range []int{small, large} {
		body := repeatedRead(t, page, copies)
		var obs []Observation
		var err error
		mallocs[i], bytes[i] = allocated(func() { obs, err = Find(body, focusgate.APIChat, Options{All: true}) })
		if err != nil || len(obs) != copies {
			t.Fatalf("%d copies: %d observations, %v", copies, len(obs), err)
		}
		checkRaw(t, body, obs[copies-1])
	}
	const most = 1.2 * large / small
	if r := float64(mallocs[1]) / float64(mallocs[0]); r > most {
		t.Errorf("%d copies made %.1f times the allocations of %d (%d, %d), want at most %.0f", large, r, small, mallocs[1], mallocs[0], most)
	}
	if r := float64(bytes[1]) / float64(bytes[0]); r > most {
		t.Errorf("%d copies allocated %.1f times the bytes of %d (%d, %d), want at most %.0f", large, r, small, bytes[1], bytes[0], most)
	}
}
