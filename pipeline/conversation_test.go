package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/cache/cachetest"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/internal/redistest"
	"github.com/focusgate/focusgate/pipeline"
	"github.com/focusgate/focusgate/prune"
)

// playwrightYAML renders a BrowserGym accessibility tree as a Playwright
// aria snapshot, the way Playwright MCP prints a page: two-space YAML list
// items `- role "name" [attr] [ref=eN]`, a `- /url:` child under links, text
// nodes as `- text:`. The root line becomes the page title; refs are numbered
// in document order from first.
func playwrightYAML(t testing.TB, tree string, first int) (title, yaml string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(tree, "\n"), "\n")
	depth := func(l string) int { return len(l) - len(strings.TrimLeft(l, "\t")) }
	var b strings.Builder
	ref := first
	for i, l := range lines {
		role, name, props := parseBrowserGymLine(strings.TrimLeft(l, "\t"))
		if i == 0 {
			title = name
			continue
		}
		indent := strings.Repeat("  ", depth(l)-1)
		if role == "StaticText" {
			if name != "" {
				fmt.Fprintf(&b, "%s- text: %s\n", indent, name)
			}
			continue
		}
		b.WriteString(indent + "- " + role)
		if name != "" {
			b.WriteString(" " + strconv.Quote(name))
		}
		for _, p := range props {
			switch p {
			case "focused":
				b.WriteString(" [active]")
			case "checked='true'", "expanded=True", "selected=True", "disabled=True":
				b.WriteString(" [" + strings.SplitN(p, "=", 2)[0] + "]")
			}
		}
		fmt.Fprintf(&b, " [ref=e%d]", ref)
		ref++
		url := ""
		for _, p := range props {
			if v, ok := strings.CutPrefix(p, "url="); ok && role == "link" {
				url = strings.Trim(v, "'")
			}
		}
		hasChildren := i+1 < len(lines) && depth(lines[i+1]) > depth(l)
		switch {
		case url != "":
			fmt.Fprintf(&b, ":\n%s  - /url: %s\n", indent, url)
		case hasChildren:
			b.WriteString(":\n")
		default:
			b.WriteString("\n")
		}
	}
	return title, strings.TrimRight(b.String(), "\n")
}

// parseBrowserGymLine splits `[bid] role 'name', prop, prop=value` (the bid
// is dropped: Playwright numbers its own refs).
func parseBrowserGymLine(l string) (role, name string, props []string) {
	if strings.HasPrefix(l, "[") {
		if end := strings.Index(l, "] "); end > 0 {
			l = l[end+2:]
		}
	}
	role, l, _ = strings.Cut(l, " ")
	role = strings.TrimSuffix(role, ",")
	if role == "RootWebArea" {
		role = "document"
	}
	if len(l) > 0 && (l[0] == '\'' || l[0] == '"') {
		q := l[0]
		i := 1
		for i < len(l) && l[i] != q {
			if l[i] == '\\' {
				i++
			}
			i++
		}
		name = strings.ReplaceAll(l[1:min(i, len(l))], `\'`, "'")
		l = l[min(i+1, len(l)):]
	}
	for _, p := range strings.Split(l, ", ") {
		if p = strings.TrimSpace(strings.TrimPrefix(p, ",")); p != "" {
			props = append(props, p)
		}
	}
	return role, name, props
}

// loopStep is one tool call of the agent and the page it brought back.
type loopStep struct {
	tool, args string // args may name a ref of the previous page as {ref:NEEDLE}
	say        string // what the assistant wrote with the call, if anything
	page       string // BrowserGym tree under ../testdata/axtrees
	code       string // the Playwright code the tool reports it ran
}

// orderLaptop is a Playwright MCP session on ServiceNow: open the catalog,
// look at two items, order one.
var orderLaptop = []loopStep{
	{tool: "browser_navigate", args: `{"url":"https://dev282647.service-now.com/now/nav/ui/home"}`,
		page: "bgym-pr301_workarena_home_allmenu.txt", code: "await page.goto('https://dev282647.service-now.com/now/nav/ui/home');"},
	{tool: "browser_click", args: `{"element":"Service Catalog link","ref":"{ref:link \"Service Catalog\"}"}`,
		say:  "The All menu is open. I will open the Service Catalog.",
		page: "bgym-pr301_workarena_catalog.txt", code: "await page.getByRole('link', { name: 'Service Catalog' }).click();"},
	{tool: "browser_click", args: `{"element":"Standard Laptop link","ref":"{ref:link \"Standard Laptop\"}"}`,
		page: "bgym-pr301_workarena_standard_laptop_form.txt", code: "await page.getByRole('link', { name: 'Standard Laptop' }).click();"},
	{tool: "browser_navigate", args: `{"url":"https://dev282647.service-now.com/com.glideapp.servicecatalog_cat_item_view.do?sysparm_id=ipad_pro"}`,
		say:  "The laptop costs $1,100. Let me compare it with the iPad Pro.",
		page: "bgym-pr301_workarena_ipad_pro_form.txt", code: "await page.goto('https://dev282647.service-now.com/com.glideapp.servicecatalog_cat_item_view.do?sysparm_id=ipad_pro');"},
	{tool: "browser_click", args: `{"element":"Order Now button","ref":"{ref:button \"Order Now\"}"}`,
		say:  "The iPad Pro is cheaper; ordering it.",
		page: "bgym-pr301_workarena_order_status.txt", code: "await page.getByRole('button', { name: 'Order Now' }).click();"},
}

const (
	loopSystemPrompt = "You are a browsing assistant. Operate the browser with the Playwright tools. Take a snapshot before you click, and refer to elements by their ref."
	loopTask         = "In the ServiceNow service catalog, compare the Standard Laptop with the iPad Pro and order the cheaper one. Tell me the request number."
)

// loopNeedles are what the scripted retriever keeps: the elements the
// agent acts on, the request number it reports, and every control with a
// name, as a generous retriever would (about half of each page's tokens
// go, as with FocusAgent).
var loopNeedles = []string{`"Service Catalog"`, `"Standard Laptop"`, `"iPad pro"`, `"Order Now"`, "REQ0010037", "[active]",
	`- button "`, `- link "`, `- textbox "`, `- combobox "`, `- heading "`, `- radio "`, `- checkbox "`, `- /url: https`}

var refPattern = regexp.MustCompile(`\[ref=(e\d+)\]`)

// conversation is an agent's tool loop, rendered once: every request of
// the loop repeats the same bytes for the turns it shares with the others.
type conversation struct {
	api      focusgate.API
	head     string            // the body up to the first item
	items    []json.RawMessage // messages (Chat) or input items (Responses)
	tail     string            // the body after the last item
	requests []int             // requests[k]: how many items request k carries
	pages    []string          // the YAML snapshot of each step
	calls    []string          // each step's tool call as the history shows it: name(arguments)
}

// body is request k (0-based) as the agent sends it.
func (c *conversation) body(k int) []byte {
	var b bytes.Buffer
	b.WriteString(c.head)
	for i, it := range c.items[:c.requests[k]] {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteString(c.tail)
	return b.Bytes()
}

func mustMarshal(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newConversation renders steps as the OpenAI SDK tool loop of a Playwright
// MCP agent sends them: for Chat, a system prompt, the task and then an
// assistant tool call and a tool message per step; for Responses, the
// instructions, the task and function_call / function_call_output items.
// Tool results alternate between a string and a list of text parts, as
// agents send both.
func newConversation(t *testing.T, api focusgate.API, steps []loopStep) *conversation {
	t.Helper()
	c := &conversation{api: api}
	tools := `"tools":[{"type":"function","function":{"name":"browser_click","description":"Perform click on a web page","parameters":{"type":"object","properties":{"element":{"type":"string"},"ref":{"type":"string"}},"required":["element","ref"]}}},` +
		`{"type":"function","function":{"name":"browser_navigate","description":"Navigate to a URL","parameters":{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}}}]`
	if api == focusgate.APIChat {
		c.head = `{"model":"gpt-4.1","messages":[`
		c.tail = `],` + tools + `,"tool_choice":"auto","parallel_tool_calls":false}`
		c.items = append(c.items,
			mustMarshal(t, map[string]any{"role": "system", "content": loopSystemPrompt}),
			mustMarshal(t, map[string]any{"role": "user", "content": loopTask}))
	} else {
		c.head = `{"model":"gpt-4.1","instructions":` + string(mustMarshal(t, loopSystemPrompt)) + `,"input":[`
		c.tail = `],` + strings.ReplaceAll(strings.ReplaceAll(tools, `"function":{`, ``), `}}}`, `}}`) + `,"store":false}`
		c.items = append(c.items, mustMarshal(t, map[string]any{"role": "user", "content": []map[string]string{{"type": "input_text", "text": loopTask}}}))
	}
	prevPage := ""
	for i, s := range steps {
		args := regexp.MustCompile(`\{ref:(.*?)\}"`).ReplaceAllStringFunc(s.args, func(m string) string {
			needle := strings.ReplaceAll(m[len(`{ref:`):len(m)-2], `\"`, `"`)
			for _, l := range strings.Split(prevPage, "\n") {
				if strings.Contains(l, needle) {
					if ref := refPattern.FindStringSubmatch(l); ref != nil {
						return ref[1] + `"`
					}
				}
			}
			t.Fatalf("step %d: no %q on the previous page", i, needle)
			return ""
		})
		title, yaml := playwrightYAML(t, string(readFile(t, "../testdata/axtrees/"+s.page)), 1)
		c.pages = append(c.pages, yaml)
		c.calls = append(c.calls, s.tool+"("+args+")")
		prevPage = yaml
		result := "### Ran Playwright code\n```js\n" + s.code + "\n```\n\n### Page\n- Page URL: https://dev282647.service-now.com/\n- Page Title: " + title +
			"\n\n### Snapshot\n```yaml\n" + yaml + "\n```\n"
		id := fmt.Sprintf("call_%d", i+1)
		var content any = result
		if i%2 == 1 {
			content = []map[string]string{{"type": map[focusgate.API]string{focusgate.APIChat: "text", focusgate.APIResponses: "input_text"}[api], "text": result}}
		}
		if api == focusgate.APIChat {
			var say any
			if s.say != "" {
				say = s.say
			}
			c.items = append(c.items,
				mustMarshal(t, map[string]any{"role": "assistant", "content": say, "tool_calls": []any{
					map[string]any{"id": id, "type": "function", "function": map[string]string{"name": s.tool, "arguments": args}}}}),
				mustMarshal(t, map[string]any{"role": "tool", "tool_call_id": id, "content": content}))
		} else {
			if s.say != "" {
				c.items = append(c.items, mustMarshal(t, map[string]any{"type": "message", "role": "assistant",
					"content": []map[string]string{{"type": "output_text", "text": s.say}}}))
			}
			c.items = append(c.items,
				mustMarshal(t, map[string]any{"type": "function_call", "call_id": id, "name": s.tool, "arguments": args}),
				mustMarshal(t, map[string]any{"type": "function_call_output", "call_id": id, "output": content}))
		}
		c.requests = append(c.requests, len(c.items))
	}
	return c
}

// sentItems returns the raw items of the messages or input array of a
// forwarded body, and the offset in body where the last one ends.
func sentItems(t *testing.T, api focusgate.API, body []byte) ([]string, int) {
	t.Helper()
	member := map[focusgate.API]string{focusgate.APIChat: "messages", focusgate.APIResponses: "input"}[api]
	arr := gjson.GetBytes(body, member)
	if !arr.IsArray() {
		t.Fatalf("forwarded body has no %s array", member)
	}
	var items []string
	end := 0
	for _, it := range arr.Array() {
		items = append(items, it.Raw)
		end = it.Index + len(it.Raw)
	}
	return items, end
}

// loopPipeline is a pruning pipeline over pr, whose retriever keeps
// loopNeedles.
func loopPipeline(pr pipeline.Pruner, configure ...func(*pipeline.Options)) *pipeline.Pipeline {
	return retrieverPipeline(pr, configure...)
}

func loopPruner(rt *retriever, model string, store cache.Store) *prune.Pruner {
	return retrieverPruner(rt, model, store)
}

// newestOnly prunes the newest observation and forwards every older one as
// it came: how focusgate behaved before older observations were re-applied,
// kept here to measure what re-applying saves.
type newestOnly struct{ *prune.Pruner }

func (newestOnly) Reapply(_ context.Context, in prune.Input) prune.Result {
	return prune.Result{Text: in.Tree.Text, Status: focusgate.StatusSkipped, Reason: focusgate.ReasonNotCached}
}

func (n newestOnly) ReapplyHeld(ctx context.Context, in prune.Input) (prune.Result, bool) {
	return n.Reapply(ctx, in), true
}

// send runs request k of c through p.
func (c *conversation) send(p *pipeline.Pipeline, k int, mode string) ([]byte, focusgate.Outcome) {
	return rewrite(p, focusgate.Request{API: c.api, Body: c.body(k), Mode: mode})
}

// run sends every request of c through p and returns what would be
// forwarded for each, checking the prefix property on the way: the items
// forwarded for request k come back byte-identical at the head of request
// k+1, and the retriever is asked about each new page once. It also returns
// the sum of the outcomes' counts of older observations.
func run(t *testing.T, p *pipeline.Pipeline, rt *retriever, c *conversation) ([][]byte, focusgate.Older) {
	t.Helper()
	var sent [][]byte
	var older focusgate.Older
	calls0 := len(rt.Calls())
	for k := range c.requests {
		fwd, out := c.send(p, k, "")
		if out.Status != focusgate.StatusPruned {
			t.Fatalf("request %d: %s %s, want pruned", k, out.Status, out.Reason)
		}
		if !json.Valid(fwd) {
			t.Fatalf("request %d: the pipeline returned invalid JSON", k)
		}
		sent = append(sent, fwd)
		older.Reapplied += out.Older.Reapplied
		older.Left += out.Older.Left
		older.Pruned += out.Older.Pruned
		if n := len(rt.Calls()) - calls0; n != k+1 {
			t.Errorf("after request %d the retriever was called %d times, want %d (once per new page)", k, n, k+1)
		}
		checkTokens(t, k, out, c.body(k), c.api)
		if k == 0 {
			continue
		}
		prev, prevEnd := sentItems(t, c.api, sent[k-1])
		cur, _ := sentItems(t, c.api, fwd)
		for i := range prev {
			if prev[i] != cur[i] {
				t.Errorf("request %d: item %d differs from what request %d forwarded", k, i, k-1)
			}
		}
		if !bytes.Equal(sent[k-1][:prevEnd], fwd[:prevEnd]) {
			t.Errorf("request %d: the forwarded body does not start with the bytes forwarded for request %d", k, k-1)
		}
	}
	return sent, older
}

// checkTokens holds the outcome's token counts to their meaning: every
// observation of the request is counted, the re-applied older ones
// included.
func checkTokens(t *testing.T, k int, out focusgate.Outcome, body []byte, api focusgate.API) {
	t.Helper()
	obs, err := detect.Find(body, api, detect.Options{All: true})
	if err != nil || len(obs) != k+1 {
		t.Fatalf("request %d: %d observations (%v), want %d", k, len(obs), err, k+1)
	}
	counter := prune.NewCounter(1 << 20)
	want := 0
	for _, o := range obs {
		want += counter.Count("gpt-4.1", o.Text)
	}
	if out.TokensBefore != want || out.TokensAfter <= 0 || out.TokensAfter >= out.TokensBefore || len(out.Pages) != k+1 {
		t.Errorf("request %d: %d pages, tokens %d -> %d; want %d before (all %d pages) and fewer after", k, len(out.Pages), out.TokensBefore, out.TokensAfter, want, k+1)
	}
}

// reduction is the share of request bytes the pipeline removed, over all
// requests of a conversation.
func reduction(c *conversation, sent [][]byte) float64 {
	in, out := 0, 0
	for k, s := range sent {
		in += len(c.body(k))
		out += len(s)
	}
	return 1 - float64(out)/float64(in)
}

func TestToolLoopForwardsEveryEarlierTurnUnchanged(t *testing.T) {
	for _, api := range []focusgate.API{focusgate.APIChat, focusgate.APIResponses} {
		c := newConversation(t, api, orderLaptop)
		// cachetest's Redis has no in-process front, so every older page's
		// look-up waits on Redis; with the gateway's front, they are held
		// here.
		for _, store := range []string{"memory", "redis", "redis-with-front"} {
			t.Run(fmt.Sprintf("%s/%s", api, store), func(t *testing.T) {
				rt := newRetriever(t, keep(loopNeedles...))
				model := "gpt-4.1-mini"
				var st cache.Store = cache.NewMemory(16<<20, time.Hour)
				if store != "memory" {
					st = cachetest.NewStore(t, redistest.Shared(t), func(o *cache.RedisOptions) {
						if store == "redis-with-front" {
							o.FrontBytes = 8 << 20
						}
					})
					model += "-" + t.Name() + time.Now().Format(time.RFC3339Nano) // keys of its own on a shared server
				}
				sent, older := run(t, loopPipeline(loopPruner(rt, model, st)), rt, c)

				n := len(c.requests)
				if want := (focusgate.Older{Reapplied: n * (n - 1) / 2}); older != want {
					t.Errorf("older observations %+v, want %+v: every older page re-applied", older, want)
				}
				checkRetrieverPrompts(t, rt, c)
				if store == "memory" {
					// The same conversation through a pipeline that prunes
					// only the newest page, for the numbers.
					rt2 := newRetriever(t, keep(loopNeedles...))
					old := run2(loopPipeline(newestOnly{loopPruner(rt2, model, cache.NewMemory(16<<20, time.Hour))}), c)
					now, before := reduction(c, sent), reduction(c, old)
					t.Logf("%d requests, %d retriever calls: whole-request bytes removed %.1f%% re-applying older pages, %.1f%% pruning the newest only",
						n, len(rt.Calls()), 100*now, 100*before)
					lastNow := 1 - float64(len(sent[n-1]))/float64(len(c.body(n-1)))
					lastBefore := 1 - float64(len(old[n-1]))/float64(len(c.body(n-1)))
					t.Logf("last request (%d pages): %d bytes in, %.1f%% removed re-applying, %.1f%% newest only",
						n, len(c.body(n-1)), 100*lastNow, 100*lastBefore)
					if now <= before {
						t.Errorf("re-applying older pages removed %.3f of the bytes, no more than pruning the newest only (%.3f)", now, before)
					}
				}
			})
		}
	}
}

// run2 sends every request of c through p, without the prefix checks.
func run2(p *pipeline.Pipeline, c *conversation) [][]byte {
	var sent [][]byte
	for k := range c.requests {
		fwd, _ := c.send(p, k, "")
		sent = append(sent, fwd)
	}
	return sent
}

// checkRetrieverPrompts: each call is about the newest page of its request,
// with the task as goal and the agent's earlier tool calls as history.
func checkRetrieverPrompts(t *testing.T, rt *retriever, c *conversation) {
	t.Helper()
	calls := rt.Calls()
	if len(calls) != len(c.requests) {
		t.Fatalf("%d retriever calls, want %d", len(calls), len(c.requests))
	}
	for k, call := range calls {
		prompt := call.Messages[len(call.Messages)-1].Content
		if !strings.HasPrefix(prompt, "# Goal\n"+loopTask+"\n\n# What the agent did so far\n") {
			t.Errorf("call %d: the goal is not the task:\n%.300s", k, prompt)
		}
		for i, s := range orderLaptop[:k+1] {
			if !strings.Contains(prompt, c.calls[i]) {
				t.Errorf("call %d: the history lacks step %d's call %s", k, i, c.calls[i])
			}
			if s.say != "" && !strings.Contains(prompt, s.say) {
				t.Errorf("call %d: the history lacks what the agent said at step %d", k, i)
			}
		}
		lines := numberedLines(prompt)
		if want := strings.Split(c.pages[k], "\n"); len(lines) != len(want) || strings.TrimSpace(lines[0]) != strings.TrimSpace(want[0]) {
			t.Errorf("call %d: the numbered tree (%d lines) is not page %d (%d lines)", k, len(lines), k, len(want))
		}
	}
}

// After a restart (a new, empty in-process cache) the gateway knows no
// selection for the older pages: they go out as the agent sent them, and
// only the newest is pruned, with one retriever call.
func TestToolLoopAfterACacheFlushLeavesOlderPages(t *testing.T) {
	for _, api := range []focusgate.API{focusgate.APIChat, focusgate.APIResponses} {
		c := newConversation(t, api, orderLaptop)
		t.Run(api.String(), func(t *testing.T) {
			rt := newRetriever(t, keep(loopNeedles...))
			run(t, loopPipeline(loopPruner(rt, "m", cache.NewMemory(16<<20, time.Hour))), rt, c)

			restarted := loopPipeline(loopPruner(rt, "m", cache.NewMemory(16<<20, time.Hour)))
			calls := len(rt.Calls())
			last := len(c.requests) - 1
			fwd, out := c.send(restarted, last, "")
			if out.Status != focusgate.StatusPruned {
				t.Fatalf("%s %s, want pruned (the newest page)", out.Status, out.Reason)
			}
			if n := len(rt.Calls()) - calls; n != 1 {
				t.Errorf("retriever called %d times after the restart, want 1 (the newest page only)", n)
			}
			checkOlderAsSent(t, c, c.body(last), fwd)
			if want := (focusgate.Older{Left: last}); out.Older != want {
				t.Errorf("older observations %+v, want %+v", out.Older, want)
			}
		})
	}
}

// checkOlderAsSent checks that every item before the newest page is
// forwarded as the agent sent it.
func checkOlderAsSent(t *testing.T, c *conversation, body, fwd []byte) {
	t.Helper()
	orig, _ := sentItems(t, c.api, body)
	got, _ := sentItems(t, c.api, fwd)
	for i := range orig[:len(orig)-1] {
		if orig[i] != got[i] {
			t.Errorf("item %d was changed; an older page with no known selection must go out as it came", i)
		}
	}
	if orig[len(orig)-1] == got[len(got)-1] {
		t.Error("the newest page was not pruned")
	}
}

// With Redis, selections outlive a gateway: a replica that never saw the
// conversation re-applies the older pages from Redis. Once Redis has lost
// them (a restart without persistence), the older pages go out as they came.
func TestToolLoopOlderPagesFromRedis(t *testing.T) {
	srv := redistest.Start(t)
	c := newConversation(t, focusgate.APIChat, orderLaptop)
	rt := newRetriever(t, keep(loopNeedles...))
	last := len(c.requests) - 1

	a := loopPipeline(loopPruner(rt, "m", cachetest.NewStore(t, srv.URL())))
	var sent [][]byte
	for k := range last {
		fwd, _ := c.send(a, k, "")
		sent = append(sent, fwd)
	}

	store := cachetest.NewStore(t, srv.URL())
	b := loopPipeline(loopPruner(rt, "m", store))
	fwd, out := c.send(b, last, "")
	prev, end := sentItems(t, c.api, sent[last-1])
	if cur, _ := sentItems(t, c.api, fwd); !bytes.Equal(fwd[:end], sent[last-1][:end]) || len(cur) <= len(prev) {
		t.Error("the other replica did not forward the earlier turns as the first one did")
	}
	if n := len(rt.Calls()); n != len(c.requests) {
		t.Errorf("retriever called %d times, want %d (once per page, across replicas)", n, len(c.requests))
	}
	if want := (focusgate.Older{Reapplied: last}); out.Older != want {
		t.Errorf("the other replica: older observations %+v, want %+v", out.Older, want)
	}

	srv.Restart()
	waitUntil(t, func() bool { return store.Status() == nil }, "Redis to be seen up again")
	fwd, out = c.send(b, last, "")
	checkOlderAsSent(t, c, c.body(last), fwd)
	if want := (focusgate.Older{Left: last}); out.Older != want {
		t.Errorf("after Redis lost its data: older observations %+v, want %+v", out.Older, want)
	}
}

// A request in another mode shows the whole conversation in that mode: the
// older pages are re-applied from their stored selections, rendered anew,
// without a retriever call.
func TestToolLoopModeChangeReappliesInTheNewMode(t *testing.T) {
	c := newConversation(t, focusgate.APIChat, orderLaptop)
	rt := newRetriever(t, keep(loopNeedles...))
	p := loopPipeline(loopPruner(rt, "m", cache.NewMemory(16<<20, time.Hour)))
	last := len(c.requests) - 1
	var fwd []byte
	for k := range last {
		fwd, _ = c.send(p, k, "")
	}
	removed, _ := sentItems(t, c.api, fwd)

	var ancestors [][]string
	for _, k := range []int{last - 1, last} {
		fwd, out := c.send(p, k, "ancestors")
		if out.Mode != focusgate.ModeAncestors {
			t.Errorf("request %d: outcome in mode %q, want ancestors", k, out.Mode)
		}
		items, _ := sentItems(t, c.api, fwd)
		ancestors = append(ancestors, items)
	}
	if n := len(rt.Calls()); n != len(c.requests) {
		t.Errorf("retriever called %d times, want %d: a mode change needs no new selection", n, len(c.requests))
	}
	tool := c.requests[0] - 1 // the first page's tool message
	if ancestors[0][tool] == removed[tool] {
		t.Error("the first page was not rendered in the requested mode")
	}
	for i := range ancestors[0] {
		if ancestors[0][i] != ancestors[1][i] {
			t.Errorf("item %d: two requests in the same mode forwarded it differently", i)
		}
	}
}

// With FOCUSGATE_PRUNE_ALL, older pages without a stored selection are
// pruned anew instead of being left.
func TestToolLoopPruneAllPrunesUnknownOlderPages(t *testing.T) {
	c := newConversation(t, focusgate.APIResponses, orderLaptop)
	rt := newRetriever(t, keep(loopNeedles...))
	p := loopPipeline(loopPruner(rt, "m", cache.NewMemory(16<<20, time.Hour)), func(o *pipeline.Options) { o.PruneAll = true })
	last := len(c.requests) - 1
	fwd, out := c.send(p, last, "")
	if n := len(rt.Calls()); n != len(c.requests) {
		t.Errorf("retriever called %d times, want one per page (%d)", n, len(c.requests))
	}
	orig, _ := sentItems(t, c.api, c.body(last))
	got, _ := sentItems(t, c.api, fwd)
	for k := range c.requests {
		if i := c.requests[k] - 1; orig[i] == got[i] {
			t.Errorf("page %d was not pruned", k)
		}
	}
	if want := (focusgate.Older{Pruned: last}); out.Older != want {
		t.Errorf("older observations %+v, want %+v", out.Older, want)
	}
}

// When the retriever fails on the newest page, that page goes out as it came
// and the request reports the failure; the older pages are still re-applied,
// so the prefix the provider cached is unchanged.
func TestToolLoopNewestFailsOlderStillReapplied(t *testing.T) {
	c := newConversation(t, focusgate.APIChat, orderLaptop)
	last := len(c.requests) - 1
	var calls atomic.Int32
	rt := newRetriever(t, func(lines []string) (int, string) {
		if calls.Add(1) > int32(last) {
			return 500, ""
		}
		return keep(loopNeedles...)(lines)
	})
	p := loopPipeline(loopPruner(rt, "m", cache.NewMemory(16<<20, time.Hour)))
	var prev []byte
	for k := range last {
		prev, _ = c.send(p, k, "")
	}
	_, prevEnd := sentItems(t, c.api, prev)

	fwd, out := c.send(p, last, "")
	if out.Status != focusgate.StatusFailedOpen || out.Reason != focusgate.ReasonRetrieverHTTP5xx {
		t.Errorf("%s %s, want failed-open retriever-http-5xx", out.Status, out.Reason)
	}
	if out.Older.Reapplied != last {
		t.Errorf("%d older pages re-applied, want %d", out.Older.Reapplied, last)
	}
	if !bytes.Equal(fwd[:prevEnd], prev[:prevEnd]) {
		t.Error("the earlier turns were not forwarded as in the previous request")
	}
	orig, _ := sentItems(t, c.api, c.body(last))
	got, _ := sentItems(t, c.api, fwd)
	if orig[len(orig)-1] != got[len(got)-1] {
		t.Error("the newest page, whose pruning failed, did not go out as it came")
	}
}
