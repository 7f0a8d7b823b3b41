package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache/cachetest"
	"github.com/focusgate/focusgate/internal/redistest"
	"github.com/focusgate/focusgate/internal/testlog"
)

// usageOpenAI plays the action model and reports a token of input for every
// four bytes it received, so that a pruned request reports fewer tokens
// than a whole one.
func usageOpenAI(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"click('a12')"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":12,"total_tokens":%d}}`, len(body)/4, len(body)/4+12)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// holdoutGateway runs the gateway with half of its conversations held out,
// and sends it conversations of two steps each on the shopping page, each
// with a goal of its own. It returns the gateway and how many conversations
// it sent.
func holdoutGateway(t *testing.T) (*process, int) {
	t.Helper()
	gw := startGateway(t, map[string]string{
		"FOCUSGATE_UPSTREAM_URL":      usageOpenAI(t).URL + "/v1",
		"FOCUSGATE_RETRIEVER_URL":     defenderRetriever(t).URL + "/v1",
		"FOCUSGATE_RETRIEVER_API_KEY": "sk-retriever-secret",
		"FOCUSGATE_PROMPT":            "defender",
		"FOCUSGATE_HOLDOUT":           "0.5",
		// One conversation followed at a time: each new one ends the one
		// before, so that conversations end when the test says, not
		// after a quiet time.
		"FOCUSGATE_HOLDOUT_MAX_OPEN": "1",
	})
	const conversations = 30
	for i := range conversations {
		body := pageRequest(t, fmt.Sprintf("List out reviewers, if exist, who mention about ear cups being small (customer %d)", i))
		for range 2 {
			send(t, gw.URL, body)
		}
	}
	// A last conversation ends the thirtieth, and stays open itself.
	send(t, gw.URL, []byte(`{"model":"gpt-4.1","messages":[{"role":"user","content":"Anything else?"}]}`))
	return gw, conversations
}

// holdoutOverview reads the dashboard's data once the conversations of all
// the given steps have ended: no sleep, the test polls until the gateway
// says so.
func holdoutOverview(t *testing.T, gw *process, steps int) focusgate.HoldoutReport {
	t.Helper()
	var r focusgate.HoldoutReport
	gw.logs.WaitUntil(t, "every conversation counted", func(string) bool {
		resp, err := http.Get(gw.URL + "/ui/api/overview")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var o struct{ Holdout *focusgate.HoldoutReport }
		if json.NewDecoder(resp.Body).Decode(&o) != nil || o.Holdout == nil {
			return false
		}
		r = *o.Holdout
		return r.Arms[0].Steps+r.Arms[1].Steps == steps
	})
	return r
}

// With FOCUSGATE_HOLDOUT, the overview shows the two arms side by side: what
// a conversation costs and how many steps it takes in each, the difference
// with its interval, and the honesty note. A real headless Chromium reads
// it.
func TestHoldoutOnTheDashboard(t *testing.T) {
	gw, n := holdoutGateway(t)
	r := holdoutOverview(t, gw, 2*n)
	if r.Arms[0].Conversations == 0 || r.Arms[1].Conversations == 0 {
		t.Fatalf("arms %+v: want conversations in both", r.Arms)
	}
	ctx := browser(t)
	dir := artifacts(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(gw.URL+"/ui")); err != nil {
		t.Fatal(err)
	}
	textOf(t, ctx, `#holdout [data-k=arm_pruned] .v`, fmt.Sprint(r.Arms[0].Conversations))
	textOf(t, ctx, `#holdout [data-k=arm_holdout] .v`, fmt.Sprint(r.Arms[1].Conversations))
	textOf(t, ctx, `#holdout-note`, "50.0% of conversations are held out")
	textOf(t, ctx, `#holdout-note`, "savings elsewhere on this page are the pruned arm's only")
	// Every conversation took two steps in either arm: no difference, and
	// none to measure.
	textOf(t, ctx, `#holdout-all tr[data-metric=steps]`, "2.00")
	textOf(t, ctx, `#holdout-all tr[data-metric=steps] .verdict`, "not yet clear · no difference so far")
	// The pruned arm read fewer tokens and cost less, retriever included,
	// beyond doubt.
	textOf(t, ctx, `#holdout-all tr[data-metric=input_tokens] .verdict`, "pruning lowers it")
	textOf(t, ctx, `#holdout-all tr[data-metric=usd] .verdict`, "pruning lowers it")
	tokens := texts(t, ctx, `#holdout-all tr[data-metric=input_tokens] td`)
	if len(tokens) != 6 || !strings.HasPrefix(tokens[3], "−") {
		t.Errorf("the input tokens row reads %q: want a negative difference", tokens)
	}
	// Two steps of a whole page versus two steps of a pruned one: the
	// holdout's figure is what the same traffic costs unpruned.
	for _, m := range r.Metrics {
		if m.Name == "input_tokens" && (m.Holdout <= m.Pruned || m.Low >= m.High) {
			t.Errorf("input tokens: %+v", m)
		}
	}
	// Per action model: one model, with conversations enough in both arms.
	click(t, ctx, `#holdout-models details summary`)
	textOf(t, ctx, `#holdout-models details[open] summary`, "gpt-4.1-2025-04-14")
	textOf(t, ctx, `#holdout-models details[open] tr[data-metric=input_tokens] .verdict`, "pruning lowers it")
	screenshot(t, ctx, dir, "holdout.png")

	// The same figures offline, from the conversation lines of the log.
	log := filepath.Join(t.TempDir(), "gateway.log")
	if err := os.WriteFile(log, []byte(gw.logs.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"focusgate", "eval", "--conversations", log, "--json"}, func(string) string { return "" }, nil, &out, &errOut); err != nil {
		t.Fatalf("eval --conversations: %v\n%s", err, errOut.String())
	}
	var offline focusgate.HoldoutReport
	if err := json.Unmarshal(out.Bytes(), &offline); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(offline.Arms) != fmt.Sprint(r.Arms) {
		t.Errorf("offline arms %+v, dashboard %+v", offline.Arms, r.Arms)
	}
	for i, m := range offline.Metrics {
		d := r.Metrics[i]
		if m.Name != d.Name || m.Verdict != d.Verdict || !near(m.Pruned, d.Pruned) || !near(m.Holdout, d.Holdout) || !near(m.Low, d.Low) {
			t.Errorf("offline %s: %+v\ndashboard: %+v", m.Name, m, d)
		}
	}
	out.Reset()
	if err := run(context.Background(), []string{"focusgate", "eval", "--conversations", log}, func(string) string { return "" }, nil, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"held out and sent whole", "input tokens per conversation", "pruning: lower"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
}

// near compares figures that went through a log line: dollars are logged
// with all their digits, but summed in another order.
func near(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= 1e-9*max(1, a, -a)
}

// Two gateways with the same FOCUSGATE_HOLDOUT_KEY, sharing one Redis or
// nothing, serve the recorded runs of real agents in turns (one request
// here, the next there): every request of a run is in the same arm.
func TestReplicasKeepEachRunInOneArm(t *testing.T) {
	for _, shared := range []string{"none", "redis"} {
		t.Run(shared, func(t *testing.T) {
			up := usageOpenAI(t)
			redisURL := ""
			if shared == "redis" {
				redisURL = redistest.Start(t).URL()
			}
			env := func() map[string]string {
				e := map[string]string{
					"FOCUSGATE_UPSTREAM_URL":  up.URL + "/v1",
					"FOCUSGATE_ANTHROPIC_URL": up.URL,
					"FOCUSGATE_MODE":          "off", // the arm is decided before pruning, which is not needed here
					"FOCUSGATE_HOLDOUT":       "0.5",
					"FOCUSGATE_HOLDOUT_KEY":   "our-team-split",
				}
				if shared == "redis" {
					e["FOCUSGATE_REDIS_URL"] = redisURL
					e["FOCUSGATE_REDIS_TIMEOUT"] = cachetest.CallTimeout.String()
				}
				return e
			}
			replicas := []*process{startGateway(t, env()), startGateway(t, env())}
			dirs, _ := filepath.Glob("../../testdata/agents/*/*")
			arms := map[bool]int{}
			for _, dir := range dirs {
				files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
				// Stagehand's calls are conversations of their own; a body
				// sized by count_tokens is no step; Gemini's paths name
				// their model, which this test does not know.
				files = slices.DeleteFunc(files, func(f string) bool { return strings.Contains(f, "count_tokens") })
				if len(files) < 2 || strings.Contains(dir, "stagehand") || slices.ContainsFunc(files, func(f string) bool { return strings.Contains(f, "GenerateContent") }) {
					continue
				}
				slices.Sort(files)
				var statuses []string
				for i, f := range files {
					body, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					path := "/v1/chat/completions"
					switch base := filepath.Base(f); {
					case strings.Contains(base, "responses"):
						path = "/v1/responses"
					case strings.Contains(base, "messages"):
						path = "/v1/messages"
					}
					resp, err := http.Post(replicas[i%2].URL+path, "application/json", bytes.NewReader(body))
					if err != nil {
						t.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					statuses = append(statuses, resp.Header.Get("X-Focusgate-Status"))
				}
				// With FOCUSGATE_MODE=off the pruned arm says why it
				// skipped; the holdout says only that it did.
				held := statuses[0] == "skipped"
				arms[held]++
				for i, st := range statuses {
					if (st == "skipped") != held {
						t.Errorf("%s: request %d is %q, the first was %q", dir, i+1, st, statuses[0])
					}
				}
			}
			if arms[true]+arms[false] < 10 {
				t.Errorf("only %d runs replayed", arms[true]+arms[false])
			}
			t.Logf("%d runs held out, %d pruned", arms[true], arms[false])
		})
	}
}

// startReplicas starts n gateways with the same settings, in this process,
// writing to one log, so that a test can wait for what any of them logs.
func startReplicas(t *testing.T, env map[string]string, n int) ([]*process, *testlog.Buffer) {
	t.Helper()
	logs := testlog.New()
	var reps []*process
	for range n {
		e := maps.Clone(env)
		addr := freeAddr(t)
		e["FOCUSGATE_ADDR"] = addr
		e["FOCUSGATE_SHUTDOWN_DELAY"] = "0s"
		ctx, cancel := context.WithCancel(context.Background())
		hurry, hurried := context.WithCancel(context.Background())
		ctx = withHurry(ctx, hurry)
		p := &process{URL: "http://" + addr, logs: logs, stop: cancel, hurry: hurried, done: make(chan struct{})}
		go func() {
			defer close(p.done)
			p.err = run(ctx, []string{"focusgate"}, func(k string) string { return e[k] }, nil, io.Discard, logs)
		}()
		t.Cleanup(func() {
			cancel()
			hurried()
			p.wait(t, time.Minute)
		})
		reps = append(reps, p)
	}
	logs.WaitUntil(t, "every replica listening", func(s string) bool { return strings.Count(s, "focusgate listening") == n })
	return reps, logs
}

// scrape sums a metric's samples on every replica, labels aside.
func scrape(t *testing.T, reps []*process, name string) float64 {
	t.Helper()
	sum := 0.0
	for _, p := range reps {
		resp, err := http.Get(p.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for line := range strings.Lines(string(body)) {
			fields := strings.Fields(line)
			if len(fields) == 2 && (fields[0] == name || strings.HasPrefix(fields[0], name+"{")) {
				v, err := strconv.ParseFloat(fields[1], 64)
				if err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				sum += v
			}
		}
	}
	return sum
}

// dashboardHoldout reads the holdout card's data of one replica's
// dashboard.
func dashboardHoldout(t *testing.T, p *process) focusgate.HoldoutReport {
	t.Helper()
	resp, err := http.Get(p.URL + "/ui/api/overview")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var o struct{ Holdout *focusgate.HoldoutReport }
	if err := json.NewDecoder(resp.Body).Decode(&o); err != nil || o.Holdout == nil {
		t.Fatalf("overview: %v, holdout %v", err, o.Holdout)
	}
	return *o.Holdout
}

// sharedHoldoutEnv is two replicas' settings for a holdout of half the
// conversations, accounted for in the Redis at redisURL, pruning pages
// with the defender retriever.
func sharedHoldoutEnv(t *testing.T, redisURL, idle string) map[string]string {
	t.Helper()
	return map[string]string{
		"FOCUSGATE_UPSTREAM_URL":      usageOpenAI(t).URL + "/v1",
		"FOCUSGATE_RETRIEVER_URL":     defenderRetriever(t).URL + "/v1",
		"FOCUSGATE_RETRIEVER_API_KEY": "sk-retriever-secret",
		"FOCUSGATE_PROMPT":            "defender",
		"FOCUSGATE_HOLDOUT":           "0.5",
		"FOCUSGATE_HOLDOUT_KEY":       "our-team-split",
		"FOCUSGATE_HOLDOUT_IDLE":      idle,
		"FOCUSGATE_REDIS_URL":         redisURL,
		"FOCUSGATE_REDIS_TIMEOUT":     cachetest.CallTimeout.String(),
	}
}

// Two gateways sharing one Redis, behind a round-robin balancer without
// affinity (request by request, in turns), count 30 conversations of 8
// steps as 30 conversations and 240 steps, in their metrics and on both
// dashboards, which agree.
//
// Conversations end once quiet for FOCUSGATE_HOLDOUT_IDLE: 5 s, far more
// than the gap between two requests of a conversation (sent back to back)
// on the slowest machine, so that none is cut in two; the test waits for
// the conversation lines, not for a time.
func TestReplicasCountConversationsWhole(t *testing.T) {
	reps, logs := startReplicas(t, sharedHoldoutEnv(t, redistest.Start(t).URL(), "5s"), 2)
	const conversations, steps = 30, 8
	for i := range conversations {
		body := pageRequest(t, fmt.Sprintf("List out reviewers, if exist, who mention about ear cups being small (customer %d)", i))
		for s := range steps {
			send(t, reps[(i*steps+s)%2].URL, body)
		}
	}
	logs.WaitUntil(t, "30 conversation lines", func(s string) bool { return strings.Count(s, " msg=conversation ") >= conversations })

	if got := strings.Count(logs.String(), " msg=conversation "); got != conversations {
		t.Errorf("%d conversation lines between the replicas, want %d", got, conversations)
	}
	if c, s := scrape(t, reps, "focusgate_conversations_total"), scrape(t, reps, "focusgate_conversation_steps_sum"); c != conversations || s != conversations*steps {
		t.Errorf("the replicas' metrics count %v conversations and %v steps, want %d and %d", c, s, conversations, conversations*steps)
	}
	a, b := dashboardHoldout(t, reps[0]), dashboardHoldout(t, reps[1])
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("the dashboards differ:\n%s\n%s", ja, jb)
	}
	if a.Scope != focusgate.ScopeTeam || a.Note != "" {
		t.Errorf("scope %q, note %q: want the team's figures", a.Scope, a.Note)
	}
	c, s := a.Arms[0].Conversations+a.Arms[1].Conversations, a.Arms[0].Steps+a.Arms[1].Steps
	if c != conversations || s != conversations*steps || a.Arms[0].Conversations == 0 || a.Arms[1].Conversations == 0 {
		t.Errorf("the dashboards show %+v: want %d conversations of %d steps, in both arms", a.Arms, conversations, steps)
	}
	for _, m := range a.Metrics {
		if m.Name == "steps" && (m.Pruned != steps || m.Holdout != steps) {
			t.Errorf("steps per conversation: %v pruned, %v held out; want %d each", m.Pruned, m.Holdout, steps)
		}
	}
}

// With the team's Redis stopped mid-run, every request still succeeds (no
// request waits on Redis: steps are written in the background), and both
// dashboards say that their figures are per replica.
func TestReplicasCountPerReplicaWithoutRedis(t *testing.T) {
	srv := redistest.Start(t)
	reps, _ := startReplicas(t, sharedHoldoutEnv(t, srv.URL(), "10m"), 2)
	talk := func(from, to int) {
		for i := from; i < to; i++ {
			body := pageRequest(t, fmt.Sprintf("Find the cheapest ear cups (customer %d)", i))
			for s := range 4 {
				send(t, reps[(i*4+s)%2].URL, body) // fails the test unless 200 OK
			}
		}
	}
	talk(0, 3)
	if r := dashboardHoldout(t, reps[0]); r.Scope != focusgate.ScopeTeam {
		t.Errorf("with Redis up: scope %q, note %q", r.Scope, r.Note)
	}
	srv.Stop()
	talk(3, 6)
	for i, p := range reps {
		r := dashboardHoldout(t, p)
		if r.Scope != focusgate.ScopeReplica || !strings.Contains(r.Note, "per replica") {
			t.Errorf("replica %d with Redis stopped: scope %q, note %q; want figures said to be per replica", i, r.Scope, r.Note)
		}
	}
	if up := scrape(t, reps, "focusgate_conversations_shared"); up != 0 {
		t.Errorf("focusgate_conversations_shared sums to %v with Redis stopped, want 0", up)
	}
}

// A holdout drawn with the built-in key is one a client can compute
// offline: start-up says so.
func TestHoldoutOnTheBuiltInKeyWarns(t *testing.T) {
	const warning = "FOCUSGATE_HOLDOUT_KEY is empty"
	for _, key := range []string{"", "our-secret"} {
		gw := startGateway(t, map[string]string{"FOCUSGATE_HOLDOUT": "0.05", "FOCUSGATE_HOLDOUT_KEY": key})
		if got := strings.Contains(gw.logs.String(), warning); got != (key == "") {
			t.Errorf("key %q: warned %v\n%s", key, got, gw.logs.String())
		}
	}
}

// 300 one-request conversations whose model name is 1 MB grow the gateway's
// memory by less than 100 MB: what the holdout, the dashboard, the metrics
// and the log keep of a name is cut to a few dozen bytes. Memory is the live
// heap after a collection, not a time.
//
// Every conversation is followed while open, whichever its arm; pruning is
// off and few are held out, so that each request costs few passes over its
// megabyte (the race detector makes each pass slow).
func TestLongModelNamesCostLittleMemory(t *testing.T) {
	gw := startGateway(t, map[string]string{
		"FOCUSGATE_UPSTREAM_URL": usageOpenAI(t).URL + "/v1",
		"FOCUSGATE_MODE":         "off",
		"FOCUSGATE_HOLDOUT":      "0.01",
		"FOCUSGATE_HOLDOUT_KEY":  "our-secret",
	})
	head := []byte(`{"model":"` + strings.Repeat("m", 1<<20) + `","messages":[{"role":"user","content":"Task `)
	ask := func(i int) {
		send(t, gw.URL, fmt.Appendf(head[:len(head):len(head)], `%d"}]}`, i))
	}
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	ask(-1) // the first request sets up what every later one shares
	before := heap()
	for i := range 300 {
		ask(i)
	}
	after := heap()
	grown := int64(after) - int64(before)
	t.Logf("300 conversations with 1 MB model names: heap %d MB → %d MB", before>>20, after>>20)
	if grown > 100<<20 {
		t.Errorf("the heap grew by %d MB, want less than 100", grown>>20)
	}
}
