package detect

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/focusgate/focusgate"
)

// pwResult is a Playwright MCP tool result: the code it ran and a snapshot
// of a page whose refs start at base, so that every page differs.
func pwResult(code, title string, base int) string {
	ref := func(i int) string { return "[ref=e" + strconv.Itoa(base+i) + "]" }
	return "### Ran Playwright code\n```js\n" + code + "\n```\n\n### Page\n- Page URL: http://127.0.0.1:8123/\n- Page Title: " + title +
		"\n### Snapshot\n```yaml\n" +
		"- generic " + ref(0) + ":\n" +
		"  - banner " + ref(1) + ":\n" +
		"    - link \"Home\" " + ref(2) + " [cursor=pointer]:\n" +
		"      - /url: /\n" +
		"    - searchbox \"Search products\" " + ref(3) + "\n" +
		"  - main " + ref(4) + ":\n" +
		"    - heading \"" + title + "\" [level=1] " + ref(5) + "\n" +
		"    - list " + ref(6) + ":\n" +
		"      - listitem " + ref(7) + ":\n" +
		"        - link \"Laptop 14\" " + ref(8) + " [cursor=pointer]:\n" +
		"          - /url: /p/1\n" +
		"      - listitem " + ref(9) + ":\n" +
		"        - link \"Laptop 16\" " + ref(10) + " [cursor=pointer]:\n" +
		"          - /url: /p/2\n" +
		"    - button \"Add to cart\" " + ref(11) + " [cursor=pointer]\n" +
		"  - contentinfo " + ref(12) + ":\n" +
		"    - paragraph " + ref(13) + ": © 2025 Example Shop\n```\n"
}

// toolCall is a chat assistant turn that calls one tool.
func toolCall(id, name, args string, text any) map[string]any {
	return map[string]any{"role": "assistant", "content": text, "tool_calls": []any{
		map[string]any{"id": id, "type": "function", "function": map[string]any{"name": name, "arguments": args}},
	}}
}

func toolResult(id string, content any) map[string]any {
	return map[string]any{"role": "tool", "tool_call_id": id, "content": content}
}

func functionCall(id, name, args string) map[string]any {
	return map[string]any{"type": "function_call", "call_id": id, "name": name, "arguments": args}
}

func functionOutput(id string, output any) map[string]any {
	return map[string]any{"type": "function_call_output", "call_id": id, "output": output}
}

const (
	loopSystem = "You are a browsing assistant. Operate the browser with the Playwright tools and refer to elements by their ref."
	loopTask   = "Find the cheapest 14-inch laptop on the shop and add it to the cart."
	navigate   = `browser_navigate({"url":"http://127.0.0.1:8123/"})`
	clickLink  = `browser_click({"element":"Laptop 14 link","ref":"e108"})`
	typeSearch = `browser_type({"element":"Search products","ref":"e203","text":"14 inch"})`
)

// toolLoops are tool-calling conversations as Playwright MCP agents send
// them, with the goal and history each observation must get.
func toolLoops(t testing.TB) []struct {
	name         string
	api          focusgate.API
	body         []byte
	goals, hists []string
} {
	t.Helper()
	snap := func(i int) string {
		return pwResult("await page.goto('http://127.0.0.1:8123/');", "Page "+strconv.Itoa(i), 100*i)
	}
	chat := func(msgs ...any) []byte {
		return mustJSON(t, map[string]any{"model": "gpt-4.1", "messages": msgs, "tools": []any{}})
	}
	return []struct {
		name         string
		api          focusgate.API
		body         []byte
		goals, hists []string
	}{
		{
			name: "chat: task in the first user message, pages from tools", api: focusgate.APIChat,
			body: chat(
				map[string]any{"role": "system", "content": loopSystem},
				map[string]any{"role": "user", "content": loopTask},
				toolCall("c1", "browser_navigate", `{"url":"http://127.0.0.1:8123/"}`, nil),
				toolResult("c1", snap(1)),
				toolCall("c2", "browser_click", `{"element":"Laptop 14 link","ref":"e108"}`, "The shop is open; I open the 14-inch laptop."),
				toolResult("c2", []part{{"text", snap(2)}}),
				toolCall("c3", "browser_type", `{"element":"Search products","ref":"e203","text":"14 inch"}`, nil),
				toolResult("c3", snap(3)),
			),
			goals: []string{loopTask, loopTask, loopTask},
			hists: []string{
				navigate,
				navigate + "\n\nThe shop is open; I open the 14-inch laptop.\n\n" + clickLink,
				navigate + "\n\nThe shop is open; I open the 14-inch laptop.\n\n" + clickLink + "\n\n" + typeSearch,
			},
		},
		{
			name: "chat: a follow-up from the user joins the task", api: focusgate.APIChat,
			body: chat(
				map[string]any{"role": "system", "content": loopSystem},
				map[string]any{"role": "user", "content": loopTask},
				toolCall("c1", "browser_navigate", `{"url":"http://127.0.0.1:8123/"}`, nil),
				toolResult("c1", snap(1)),
				map[string]any{"role": "user", "content": "Only look at laptops in stock."},
				toolCall("c2", "browser_click", `{"element":"Laptop 14 link","ref":"e108"}`, nil),
				toolResult("c2", snap(2)),
			),
			goals: []string{loopTask, loopTask + "\n\nOnly look at laptops in stock."},
			hists: []string{navigate, navigate + "\n\n" + clickLink},
		},
		{
			name: "chat: no user text, the system prompt is the task", api: focusgate.APIChat,
			body: chat(
				map[string]any{"role": "system", "content": loopSystem},
				toolCall("c1", "browser_navigate", `{"url":"http://127.0.0.1:8123/"}`, nil),
				toolResult("c1", snap(1)),
			),
			goals: []string{loopSystem},
			hists: []string{navigate},
		},
		{
			name: "responses: task in the first input message", api: focusgate.APIResponses,
			body: mustJSON(t, map[string]any{"model": "gpt-4.1", "instructions": loopSystem, "input": []any{
				map[string]any{"role": "user", "content": []part{{"input_text", loopTask}}},
				functionCall("c1", "browser_navigate", `{"url":"http://127.0.0.1:8123/"}`),
				functionOutput("c1", snap(1)),
				map[string]any{"type": "message", "role": "assistant", "content": []part{{"output_text", "The shop is open; I open the 14-inch laptop."}}},
				functionCall("c2", "browser_click", `{"element":"Laptop 14 link","ref":"e108"}`),
				functionOutput("c2", []part{{"input_text", snap(2)}}),
			}}),
			goals: []string{loopTask, loopTask},
			hists: []string{navigate, navigate + "\n\nThe shop is open; I open the 14-inch laptop.\n\n" + clickLink},
		},
		{
			name: "responses: no user text, the instructions are the task", api: focusgate.APIResponses,
			body: mustJSON(t, map[string]any{"model": "gpt-4.1", "instructions": loopSystem, "input": []any{
				functionCall("c1", "browser_navigate", `{"url":"http://127.0.0.1:8123/"}`),
				functionOutput("c1", snap(1)),
			}}),
			goals: []string{loopSystem},
			hists: []string{navigate},
		},
	}
}

func TestToolLoopGoalAndHistory(t *testing.T) {
	for _, tt := range toolLoops(t) {
		t.Run(tt.name, func(t *testing.T) {
			obs, err := Find(tt.body, tt.api, Options{All: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(obs) != len(tt.goals) {
				t.Fatalf("found %d observations, want %d", len(obs), len(tt.goals))
			}
			for i, o := range obs {
				if o.Goal != tt.goals[i] {
					t.Errorf("observation %d: Goal = %q, want %q", i, o.Goal, tt.goals[i])
				}
				if o.History != tt.hists[i] {
					t.Errorf("observation %d: History = %q, want %q", i, o.History, tt.hists[i])
				}
			}
		})
	}
}

// An observation's goal and history, and so its cache key, come only from
// the conversation up to it: a later request that carries it again gives it
// the same goal and history, which is what lets the gateway find its earlier
// selection. Checked on every request fixture, cut after each message.
func TestObservationDependsOnlyOnItsPrefix(t *testing.T) {
	bodies := map[string][]byte{}
	for _, tt := range toolLoops(t) {
		bodies[tt.name] = tt.body
	}
	for _, dir := range []string{"testdata/requests", sharedRequests} {
		files, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			bodies[filepath.Base(f)] = []byte(readFile(t, f))
		}
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			api, member := focusgate.APIChat, "messages"
			if !gjson.GetBytes(body, member).IsArray() {
				api, member = focusgate.APIResponses, "input"
			}
			full, err := Find(body, api, Options{All: true})
			if err != nil {
				t.Fatal(err)
			}
			items := gjson.GetBytes(body, member)
			if !items.IsArray() {
				t.Skipf("no %s array to cut", member)
			}
			n := len(items.Array())
			for keep := 1; keep <= n; keep++ {
				cut := cutAfter(t, body, member, keep)
				obs, err := Find(cut, api, Options{All: true})
				if err != nil {
					t.Fatalf("cut after %d items: %v", keep, err)
				}
				if len(obs) > len(full) {
					t.Fatalf("cut after %d items: %d observations, more than the full request's %d", keep, len(obs), len(full))
				}
				for i, o := range obs {
					if got, want := describeObs(o), describeObs(full[i]); got != want {
						t.Errorf("cut after %d items, observation %d differs from the full request's:\n got %s\nwant %s", keep, i, got, want)
					}
				}
				if latest, _ := Find(cut, api, Options{}); len(obs) > 0 && (len(latest) != 1 || describeObs(latest[0]) != describeObs(obs[len(obs)-1])) {
					t.Errorf("cut after %d items: the newest observation alone differs from the last of all", keep)
				}
			}
		})
	}
}

// cutAfter returns body with only the first keep elements of its member
// array, every other byte as it was.
func cutAfter(t *testing.T, body []byte, member string, keep int) []byte {
	t.Helper()
	arr := gjson.GetBytes(body, member)
	elems := arr.Array()
	end := elems[keep-1].Index + len(elems[keep-1].Raw)
	closing := arr.Index + len(arr.Raw) - 1
	var b []byte
	b = append(b, body[:end]...)
	b = append(b, body[closing:]...)
	return b
}

func describeObs(o Observation) string {
	return fmt.Sprintf("%s %s lines=%d focus=%q goal=%q history=%q text=%q",
		o.Path, o.Format, len(o.Lines), o.FocusedBID, o.Goal, o.History, strings.Clone(o.Text))
}

// longToolLoop is a Playwright MCP tool loop of the given steps, each a call
// and its snapshot: a page of about 4 KB whose refs and products are the
// step's own.
func longToolLoop(tb testing.TB, steps int) []byte {
	tb.Helper()
	msgs := []any{map[string]any{"role": "system", "content": loopSystem}, map[string]any{"role": "user", "content": loopTask}}
	for i := range steps {
		var items strings.Builder
		for k := range 40 {
			fmt.Fprintf(&items, "      - listitem [ref=e%d]:\n        - link \"Product %d of step %d\" [ref=e%d] [cursor=pointer]\n",
				1000*i+20+2*k, k, i, 1000*i+21+2*k)
		}
		page := pwResult("await page.goto('http://127.0.0.1:8123/');", "Page "+strconv.Itoa(i), 1000*i)
		page = strings.Replace(page, "    - button \"Add to cart\"", items.String()+"    - button \"Add to cart\"", 1)
		id := "c" + strconv.Itoa(i)
		msgs = append(msgs, toolCall(id, "browser_navigate", `{"url":"http://127.0.0.1:8123/"}`, nil), toolResult(id, page))
	}
	return mustJSON(tb, map[string]any{"model": "gpt-4.1", "messages": msgs, "tools": []any{}})
}

// BenchmarkFindToolLoop measures a tool loop's request as the gateway sees
// it at every step: every page but the newest read before, by a Finder
// that remembers them. The cost per page must not grow with the steps.
func BenchmarkFindToolLoop(b *testing.B) {
	for _, steps := range []int{10, 40, 160} {
		body := longToolLoop(b, steps)
		f := NewFinder(256 << 20)
		if obs, err := f.Find(body, focusgate.APIChat, Options{All: true}); err != nil || len(obs) != steps {
			b.Fatalf("Find = %d observations, %v; want %d", len(obs), err, steps)
		}
		b.Run(strconv.Itoa(steps), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.Find(body, focusgate.APIChat, Options{All: true}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*steps), "ns/page")
		})
	}
}

// Every page of a tool loop gets as its history the calls before it, up to
// MaxHistoryBytes. Each observation made the text of every turn before it
// again, so a request of n steps cost the square of n, and an agent's
// session grew dearer with every step. Ten times the steps must cost about
// ten times the allocations.
func TestToolLoopHistoriesAreLinear(t *testing.T) {
	const small, large = 20, 200
	var mallocs [2]uint64
	for i, steps := range []int{small, large} {
		body := longToolLoop(t, steps)
		var obs []Observation
		var err error
		mallocs[i], _ = allocated(func() { obs, err = Find(body, focusgate.APIChat, Options{All: true}) })
		if err != nil || len(obs) != steps {
			t.Fatalf("%d steps: %d observations, %v", steps, len(obs), err)
		}
		if want := strings.Repeat(navigate+"\n\n", steps-1) + navigate; obs[steps-1].History != keepTail(want, MaxHistoryBytes) {
			t.Errorf("%d steps: the newest page's history is %q", steps, obs[steps-1].History)
		}
	}
	const most = 1.2 * large / small
	if r := float64(mallocs[1]) / float64(mallocs[0]); r > most {
		t.Errorf("%d steps made %.1f times the allocations of %d (%d, %d), want at most %.0f", large, r, small, mallocs[1], mallocs[0], most)
	}
}

// The newest two pages of a long loop are the last two of all of them, found
// from the end.
func TestNewestTwoOfALoop(t *testing.T) {
	body := longToolLoop(t, 6)
	all, err := Find(body, focusgate.APIChat, Options{All: true})
	if err != nil || len(all) != 6 {
		t.Fatalf("Find = %d observations, %v; want 6", len(all), err)
	}
	two, err := Find(body, focusgate.APIChat, Options{Newest: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := goldenOf(two), goldenOf(all[4:]); !slices.Equal(got, want) {
		t.Errorf("the newest two:\n%+v\nwant the last two of all:\n%+v", got, want)
	}
}
