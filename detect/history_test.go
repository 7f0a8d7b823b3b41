package detect

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/focusgate/focusgate"
)

// A page's history of last resort is the assistant's turns before it, as
// many as MaxHistoryBytes holds, oldest first, joined by blank lines. The
// histories of a request's pages are taken from one text of its turns;
// whatever order the pages are described in, each is what joining its own
// turns gives, and one taken from that text is not the body's memory.
func TestHistoriesAreTheTurnsBeforeEachPage(t *testing.T) {
	bodyOf := func(sizes ...int) []byte {
		msgs := []message{{Role: "system", Content: "You drive a browser."}, {Role: "user", Content: "Buy it."}}
		for i, n := range sizes {
			msgs = append(msgs, message{Role: "assistant", Content: strings.Repeat(string(rune('a'+i)), n)},
				message{Role: "user", Content: "### Page\n" + strings.Repeat("- item\n", i+1)})
		}
		return chatBody(t, msgs...)
	}
	varied := bodyOf(40, 0, 300, 3000, 0, 9000, 60, 5000, 2000, 10, 0, 700, 4000, 30, 30, 30)
	// Turns of 5,000 bytes: each history is the two turns before its page.
	// The user turn at unit 2k+3 follows the assistant's turn k.
	even := bodyOf(5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000)

	want := func(c *conversation, ui int) string {
		var turns []string
		for i, budget := ui-1, MaxHistoryBytes; i >= 0 && budget > 0; i-- {
			if c.units[i].role != roleAssistant {
				continue
			}
			if tt := c.turnText(i); tt != "" {
				turns = append(turns, tt)
			}
			budget -= len(c.turnText(i)) + 1
		}
		slices.Reverse(turns)
		return strings.Join(turns, "\n\n")
	}
	for _, tt := range []struct {
		name  string
		body  []byte
		order []int // the units whose histories are asked for, in turn
	}{
		{"in order", varied, units(t, varied, "in order")},
		{"newest first", varied, units(t, varied, "newest first")},
		{"shuffled", varied, units(t, varied, "shuffled")},
		{"twice in order", varied, append(units(t, varied, "in order"), units(t, varied, "in order")...)},
		{"every third", varied, []int{2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32}},
		{"after a gap, then inside it", even, []int{5, 13, 9}},
		{"evenly, in order", even, units(t, even, "in order")},
	} {
		c := mustParse(t, tt.body)
		for _, ui := range tt.order {
			got, owned := c.assistantTurns(ui)
			if w := want(mustParse(t, tt.body), ui); got != w {
				t.Fatalf("%s, unit %d: history of %d bytes, want %d: %.60q…", tt.name, ui, len(got), len(w), got)
			}
			if p, b := uintptr(unsafe.Pointer(unsafe.StringData(got))), uintptr(unsafe.Pointer(&tt.body[0])); owned && p >= b && p < b+uintptr(len(tt.body)) {
				t.Fatalf("%s, unit %d: a history said to be the conversation's own is the body's memory", tt.name, ui)
			}
		}
	}
}

// units lists every unit of body's conversation and the end, in order,
// newest first or shuffled.
func units(t *testing.T, body []byte, order string) []int {
	n := len(mustParse(t, body).units)
	all := make([]int, n+1)
	for i := range all {
		all[i] = i
	}
	switch order {
	case "newest first":
		slices.Reverse(all)
	case "shuffled":
		rand.New(rand.NewPCG(1, 2)).Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	}
	return all
}

func mustParse(t *testing.T, body []byte) *conversation {
	t.Helper()
	c, err := parseConversation(body, focusgate.APIChat, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Texts are joined trimmed, blank ones left out, with a blank line between
// them: the goals and histories of last resort are made so, and they are
// parts of cache keys, so the join is pinned here. A lone text is returned
// as it lies in its string, without a copy.
func TestJoinText(t *testing.T) {
	tests := []struct {
		texts []string
		want  string
	}{
		{nil, ""},
		{[]string{"", " \n\t"}, ""},
		{[]string{"  Buy it.\n"}, "Buy it."},
		{[]string{"", "click('a12')", "  "}, "click('a12')"},
		{[]string{"Buy it.", "\n", " fill('b3', \"x\")\n"}, "Buy it.\n\nfill('b3', \"x\")"},
		{[]string{"a", "b", "c"}, "a\n\nb\n\nc"},
		{[]string{"\u00a0wide\u3000", "x"}, "wide\n\nx"},
	}
	for _, tt := range tests {
		if got := joinText(tt.texts...); got != tt.want {
			t.Errorf("joinText(%q) = %q, want %q", tt.texts, got, tt.want)
		}
	}
	lone := []string{"", " the task \n", "\n"}
	if n := testing.AllocsPerRun(10, func() { joinText(lone...) }); n != 0 {
		t.Errorf("joining one text allocated %v times, want 0", n)
	}
}

// An assistant turn, as history shows it, is its texts and its calls, each
// name(args), trimmed and joined by blank lines; a call's name is read
// unescaped, and the arguments of a call that holds them as a JSON value are
// that value as written. The turns are written into one text the request's
// turns share, so each is checked after others were written.
func TestTurnTexts(t *testing.T) {
	tests := []struct {
		name string
		api  focusgate.API
		turn string // the assistant's message
		want string
	}{
		{"text", focusgate.APIChat, `{"role":"assistant","content":"  I will click.\n"}`, "I will click."},
		{"empty", focusgate.APIChat, `{"role":"assistant","content":" \n"}`, ""},
		{"a call", focusgate.APIChat,
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"browser_click","arguments":"{\"ref\":\"e12\"}"}}]}`,
			`browser_click({"ref":"e12"})`},
		{"text and calls", focusgate.APIChat,
			`{"role":"assistant","content":"Next:","tool_calls":[{"type":"function","function":{"name":"a","arguments":"{}"}},{"type":"function","function":{"name":"b","arguments":"\"x\\ny\""}}]}`,
			"Next:\n\na({})\n\nb(\"x\\ny\")"},
		{"a name to trim, escaped", focusgate.APIChat,
			`{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"\n\u00a0go\u0021 ","arguments":"{} "}}]}`,
			"go! ({} )"},
		{"a name of blanks", focusgate.APIChat,
			`{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"  ","arguments":""}}]}`,
			"()"},
		{"parts and a raw input", focusgate.APIMessages,
			`{"role":"assistant","content":[{"type":"text","text":"Looking."},{"type":"text","text":"  "},{"type":"tool_use","id":"t1","name":"browser_snapshot","input":{"full": true}}]}`,
			`Looking.` + "\n\n" + `browser_snapshot({"full": true})`},
	}
	earlier := map[focusgate.API]string{
		focusgate.APIChat:     `{"role":"assistant","content":"Earlier.","tool_calls":[{"type":"function","function":{"name":"back","arguments":"{}"}}]}`,
		focusgate.APIMessages: `{"role":"assistant","content":[{"type":"text","text":"Earlier."},{"type":"tool_use","id":"t0","name":"back","input":{}}]}`,
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The turn follows another whose text was written before it.
			body := `{"model":"m","messages":[{"role":"user","content":"Buy it."},` + earlier[tt.api] +
				`,{"role":"user","content":"ok"},` + tt.turn + `]}`
			c, err := parseConversation([]byte(body), tt.api, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			last := len(c.units) - 1
			if c.units[last].role != roleAssistant {
				t.Fatalf("the last unit is not the assistant's: %+v", c.units[last])
			}
			if got := c.turnText(1); got != "Earlier.\n\nback({})" {
				t.Errorf("the earlier turn = %q", got)
			}
			if got := c.turnText(last); got != tt.want {
				t.Errorf("turnText = %q, want %q", got, tt.want)
			}
			if got := c.turnText(1); got != "Earlier.\n\nback({})" {
				t.Errorf("the earlier turn, asked again = %q", got)
			}
		})
	}
}

// The calls of a request's turns share chunks of room: each turn's calls
// stay its own, however many turns and calls come after them.
func TestTurnCallsStayTheirTurns(t *testing.T) {
	var msgs []string
	var want []string
	for i := range 60 {
		var calls, texts []string
		for k := range 1 + i%4 {
			name := fmt.Sprintf("tool_%d_%d", i, k)
			calls = append(calls, fmt.Sprintf(`{"type":"function","function":{"name":%q,"arguments":"{\"n\":%d}"}}`, name, k))
			texts = append(texts, fmt.Sprintf(`%s({"n":%d})`, name, k))
		}
		list := `"tool_calls":[` + strings.Join(calls, ",") + `]`
		if i%5 == 0 { // a duplicate list before it: the last one is the turn's
			list = `"tool_calls":[{"type":"function","function":{"name":"dropped","arguments":"{}"}}],` + list
		}
		msgs = append(msgs, `{"role":"assistant",`+list+`}`, `{"role":"user","content":"ok"}`)
		want = append(want, strings.Join(texts, "\n\n"))
	}
	body := `{"model":"m","messages":[{"role":"user","content":"Buy it."},` + strings.Join(msgs, ",") + `]}`
	c, err := parseConversation([]byte(body), focusgate.APIChat, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(want) - 1; i >= 0; i-- { // the newest first, as pages ask
		if got := c.turnText(1 + 2*i); got != want[i] {
			t.Errorf("turn %d = %q, want %q", i, got, want[i])
		}
	}
}
