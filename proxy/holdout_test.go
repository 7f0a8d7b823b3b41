package proxy_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/holdout"
	"github.com/focusgate/focusgate/proxy"
	"github.com/focusgate/focusgate/prune"
)

// withHoldout gives the gateway a holdout of the given share whose ended
// conversations go to the returned tally (after Flush), and to ended if
// given.
func withHoldout(share float64, tally **holdout.Tally, h **holdout.Holdout, ended ...*conversations) func(*gatewayOptions) {
	return func(o *gatewayOptions) {
		*tally = holdout.NewTally(share)
		sinks := []holdout.Sink{*tally}
		for _, e := range ended {
			sinks = append(sinks, e)
		}
		*h = holdout.New(holdout.Options{Share: share, Key: "test-key", Sinks: sinks})
		o.Holdout = *h
	}
}

// conversations keeps the conversations that ended.
type conversations struct {
	mu    sync.Mutex
	ended []holdout.Conversation
}

func (c *conversations) End(conv holdout.Conversation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = append(c.ended, conv)
}

// usageUpstream records each request and answers as a chat completion
// whose reported input is a token for every four bytes it received, so
// that a pruned request reports fewer tokens than a whole one.
func usageUpstream(rec *recorder) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		got := rec.record(r)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c","choices":[{"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":%d,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":64}}}`, len(got.Body)/4)
	}
}

// A held-out conversation's requests reach the upstream byte for byte as
// the client sent them, compressed ones too, say only "skipped" in their
// status (a reason would tell the client its arm), and
// cost no retriever call; with the same request in the pruned arm, the
// page is pruned.
func TestHeldOutRequestsGoWhole(t *testing.T) {
	body := readFile(t, laptopRequest)
	var tally *holdout.Tally
	var h *holdout.Holdout

	rt := newRetriever(t, keep("[a203] textbox", "[a278] button 'Order Now'"))
	held := pruningGateway(t, rt, withHoldout(1, &tally, &h))
	resp := post(t, held.URL+"/v1/chat/completions", body, nil)
	if got := resp.Header.Get(proxy.HeaderStatus); got != "skipped" {
		t.Errorf("%s = %q, want skipped, without a reason that would name the arm", proxy.HeaderStatus, got)
	}
	if got := held.upstream.last(t); !bytes.Equal(got.Body, body) {
		t.Errorf("the upstream received %d bytes, not the %d sent", len(got.Body), len(body))
	}
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write(body)
	zw.Close()
	post(t, held.URL+"/v1/chat/completions", zipped.Bytes(), map[string]string{"Content-Encoding": "gzip"})
	if got := held.upstream.last(t); !bytes.Equal(got.Body, zipped.Bytes()) || got.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("a compressed held-out body arrived as %d bytes, Content-Encoding %q; want it as sent", len(got.Body), got.Header.Get("Content-Encoding"))
	}
	if n := len(rt.Calls()); n != 0 {
		t.Errorf("the retriever was called %d times for held-out requests", n)
	}
	// The upstream reported no usage: both steps are estimated from the
	// bytes of the body, decoded.
	held.settle()
	h.Flush()
	for _, m := range tally.Report().Metrics {
		if want := float64(2 * (len(body) / 4)); m.Name == "input_tokens" && m.Holdout != want {
			t.Errorf("estimated input tokens %v, want %v", m.Holdout, want)
		}
	}

	pruned := pruningGateway(t, rt, withHoldout(0, &tally, &h))
	resp = post(t, pruned.URL+"/v1/chat/completions", body, nil)
	if got := resp.Header.Get(proxy.HeaderStatus); got != "pruned" {
		t.Errorf("in the pruned arm: %s = %q, want pruned", proxy.HeaderStatus, got)
	}
}

// Two gateways that share nothing but the holdout key put each
// conversation in the same arm: its first request through one and its
// later ones through the other agree.
func TestReplicasAgreeOnTheArm(t *testing.T) {
	rt := newRetriever(t, keep("button"))
	var ta, tb *holdout.Tally
	var ha, hb *holdout.Holdout
	a := pruningGateway(t, rt, withHoldout(0.5, &ta, &ha))
	b := pruningGateway(t, rt, withHoldout(0.5, &tb, &hb))
	heldCount := 0
	for task := range 40 {
		first := fmt.Appendf(nil, `{"model":"gpt-4.1","messages":[{"role":"system","content":"You browse."},{"role":"user","content":"Task %d"}]}`, task)
		later := fmt.Appendf(nil, `{"model":"gpt-4.1","messages":[{"role":"system","content":"You browse."},{"role":"user","content":"Task %d"},{"role":"assistant","content":"done?"},{"role":"user","content":"go on"}]}`, task)
		sa := post(t, a.URL+"/v1/chat/completions", first, nil).Header.Get(proxy.HeaderStatus)
		sb := post(t, b.URL+"/v1/chat/completions", later, nil).Header.Get(proxy.HeaderStatus)
		// In the pruned arm, a request without a page says why it was
		// skipped; a held-out one says only that it was.
		heldA, heldB := sa == "skipped", sb == "skipped"
		if heldA != heldB {
			t.Errorf("task %d: %q on one replica, %q on the other", task, sa, sb)
		}
		if heldA {
			heldCount++
		}
	}
	if heldCount == 0 || heldCount == 40 {
		t.Errorf("%d of 40 conversations held out at a share of one half", heldCount)
	}
}

// agentRun is one recorded run of a real agent: its request bodies, in order.
func agentRun(t *testing.T, dir string) [][]byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("../testdata/agents", dir, "*.json"))
	slices.Sort(files)
	if len(files) == 0 {
		t.Fatalf("no recorded run in %s", dir)
	}
	var bodies [][]byte
	for _, f := range files {
		bodies = append(bodies, readFile(t, f))
	}
	return bodies
}

// The figures of each arm on recorded conversations: the same runs of real
// agents through a gateway that holds every conversation out and through
// one that holds none take the same steps, and the pruned arm's input, as
// the upstream reports it, is smaller. Cache reads and output come from the
// upstream's report; a step the upstream fails counts as an error.
func TestPerArmFiguresOnRecordedConversations(t *testing.T) {
	runs := map[string]string{
		"playwright-mcp/chat":              "/v1/chat/completions",
		"playwright-mcp/responses":         "/v1/responses",
		"claude-code/playwright-mcp-admin": "/v1/messages",
	}
	rt := newRetriever(t, keep("button", "textbox", "heading"))
	var reports [2]focusgate.HoldoutReport
	var sent [2]int
	for i, share := range []float64{0, 1} {
		var tally *holdout.Tally
		var h *holdout.Holdout
		ended := &conversations{}
		rec := &recorder{}
		pruner := pruningGateway(t, rt).pipeline
		gw := newGateway(t, usageUpstream(rec), withHoldout(share, &tally, &h, ended), func(o *gatewayOptions) {
			o.Pipeline = pruner
			u := *o.Upstream
			u.Path = ""
			o.AnthropicUpstream = &u
		})
		for run, path := range runs {
			for _, body := range agentRun(t, run) {
				resp := post(t, gw.URL+path, body, map[string]string{"User-Agent": "OpenAI/JS 5.1.0"})
				io.Copy(io.Discard, resp.Body)
			}
		}
		for _, r := range rec.reqs {
			sent[i] += len(r.Body) / 4
		}
		gw.settle()
		h.Flush()
		reports[i] = tally.Report()
		for _, c := range ended.ended {
			if c.Agent != "OpenAI" || !strings.HasPrefix(c.Model, "gpt-4.1") && !strings.HasPrefix(c.Model, "claude") {
				t.Errorf("a conversation of agent %q, model %q; want OpenAI, the recorded model", c.Agent, c.Model)
			}
		}
	}
	pruned, held := reports[0], reports[1]
	if pruned.Arms[0].Conversations != 3 || pruned.Arms[1].Conversations != 0 || held.Arms[1].Conversations != 3 || held.Arms[0].Conversations != 0 {
		t.Fatalf("arms: all pruned %+v, all held out %+v", pruned.Arms, held.Arms)
	}
	if pruned.Arms[0].Steps != held.Arms[1].Steps || pruned.Arms[0].Steps != 11+11+7 {
		t.Errorf("steps: %d pruned, %d held out; want 29 each", pruned.Arms[0].Steps, held.Arms[1].Steps)
	}
	input := func(r focusgate.HoldoutReport, arm int) float64 {
		for _, m := range r.Metrics {
			if m.Name == "input_tokens" {
				return []float64{m.Pruned, m.Holdout}[arm] * 3
			}
		}
		return 0
	}
	if got, want := input(pruned, 0), float64(sent[0]); math.Abs(got-want) > 1e-6*want {
		t.Errorf("pruned arm: %v input tokens, the upstream reported %v", got, want)
	}
	if got, want := input(held, 1), float64(sent[1]); math.Abs(got-want) > 1e-6*want {
		t.Errorf("holdout: %v input tokens, the upstream reported %v", got, want)
	}
	if input(pruned, 0) >= input(held, 1) {
		t.Errorf("the pruned arm read %v tokens, the holdout %v: pruning removed nothing", input(pruned, 0), input(held, 1))
	}
	for _, m := range held.Metrics {
		switch m.Name {
		case "cache_read_tokens":
			if m.Holdout*3 != 64*29 {
				t.Errorf("cache reads per conversation %v, want 64 a step", m.Holdout)
			}
		case "errors":
			if m.Holdout != 0 {
				t.Errorf("errors per conversation %v, want 0", m.Holdout)
			}
		case "repeat_share":
			// The same runs repeat the same pages in both arms.
			if p := pruned.Metrics[slices.IndexFunc(pruned.Metrics, func(c focusgate.Comparison) bool { return c.Name == m.Name })]; p.Pruned != m.Holdout {
				t.Errorf("share of steps that repeat a page: %v pruned, %v held out", p.Pruned, m.Holdout)
			}
			t.Logf("share of steps that repeat a page: %v", m.Holdout)
		}
	}
}

// A step the upstream answers with an error counts as one, and a streamed
// answer's usage is read as it passes; a count_tokens request is no step.
func TestErrorsAndStreamsPerStep(t *testing.T) {
	status := http.StatusOK
	up := func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if status != http.StatusOK {
			w.WriteHeader(status)
			io.WriteString(w, `{"error":{"type":"overloaded_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"cache_read_input_tokens\":1000,\"output_tokens\":1}}}\n\n")
		w.(http.Flusher).Flush()
		io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":42}}\n\n")
	}
	var tally *holdout.Tally
	var h *holdout.Holdout
	gw := newGateway(t, up, withHoldout(0.5, &tally, &h), func(o *gatewayOptions) {
		u := *o.Upstream
		u.Path = ""
		o.AnthropicUpstream = &u
	})
	body := []byte(`{"model":"claude-sonnet-4-5","stream":true,"system":"You browse.","messages":[{"role":"user","content":"Book a room."}]}`)
	for _, st := range []int{http.StatusOK, 529, http.StatusOK} {
		status = st
		io.Copy(io.Discard, post(t, gw.URL+"/v1/messages", body, nil).Body)
	}
	status = http.StatusOK
	io.Copy(io.Discard, post(t, gw.URL+"/v1/messages/count_tokens", body, nil).Body)
	gw.settle()
	h.Flush()
	r := tally.Report()
	total := r.Arms[0].Steps + r.Arms[1].Steps
	if total != 3 {
		t.Fatalf("%d steps, want 3 (count_tokens is no step)", total)
	}
	arm := 0
	if r.Arms[1].Conversations == 1 {
		arm = 1
	}
	for _, m := range r.Metrics {
		v := []float64{m.Pruned, m.Holdout}[arm]
		switch m.Name {
		case "errors":
			if v != 1 {
				t.Errorf("errors %v, want 1", v)
			}
		case "cache_read_tokens":
			if v != 2000 {
				t.Errorf("cache reads %v, want 2000 (two streamed answers)", v)
			}
		case "input_tokens":
			// Two reported steps of 1005 tokens, and the failed one
			// estimated from its body.
			if want := float64(2*1005 + len(body)/4); v != want {
				t.Errorf("input tokens %v, want %v", v, want)
			}
		}
	}
}

// A compressed answer's usage is read once the answer is whole; the client
// gets it as the upstream sent it.
func TestCompressedAnswerUsage(t *testing.T) {
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	io.WriteString(zw, `{"id":"c","choices":[],"usage":{"prompt_tokens":321,"completion_tokens":9}}`)
	zw.Close()
	up := func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(zipped.Bytes())
	}
	var tally *holdout.Tally
	var h *holdout.Holdout
	gw := newGateway(t, up, withHoldout(1, &tally, &h))
	resp := post(t, gw.URL+"/v1/chat/completions", []byte(`{"model":"gpt-4.1","messages":[{"role":"user","content":"Hi"}]}`), map[string]string{"Accept-Encoding": "gzip"})
	if got := readBody(t, resp); !bytes.Equal(got, zipped.Bytes()) {
		t.Errorf("the client got %d bytes, not the %d compressed ones sent", len(got), zipped.Len())
	}
	gw.settle()
	h.Flush()
	for _, m := range tally.Report().Metrics {
		if m.Name == "input_tokens" && m.Holdout != 321 {
			t.Errorf("input tokens %v, want 321 from the compressed usage", m.Holdout)
		}
	}
}

// A held-out conversation is not rescued from its model's context window:
// the refusal reaches the client as the upstream sent it, once, and counts
// as the conversation's upstream error; the same request in the pruned arm
// is rescued.
func TestHeldOutConversationsAreNotRescued(t *testing.T) {
	pages := rescuePages(t)
	api := rescueAPIs[0]
	body := api.body(t, pages, false)
	for _, share := range []float64{1, 0} {
		up := &windowUpstream{api: api, limit: len(api.body(t, pages[:2], false))}
		srv := httptest.NewServer(up)
		t.Cleanup(srv.Close)
		base, _ := url.Parse(srv.URL + "/v1")
		var tally *holdout.Tally
		var h *holdout.Holdout
		gw := newGateway(t, nil, withHoldout(share, &tally, &h), func(o *gatewayOptions) {
			o.Upstream = base
			o.Pipeline = &rescuer{rescued: api.body(t, firstLines(pages), false)}
		})
		resp := post(t, gw.URL+api.path, body, api.header)
		got := readBody(t, resp)
		gw.settle()
		h.Flush()
		errors := tally.Report().Metrics[slices.IndexFunc(tally.Report().Metrics, func(m focusgate.Comparison) bool { return m.Name == "errors" })]
		if share == 1 {
			if resp.StatusCode != http.StatusBadRequest || string(got) != api.refusal || len(up.received()) != 1 {
				t.Errorf("held out: status %d after %d upstream calls; want the refusal, once", resp.StatusCode, len(up.received()))
			}
			if errors.Holdout != 1 {
				t.Errorf("held out: %v upstream errors, want 1", errors.Holdout)
			}
			continue
		}
		if resp.StatusCode != http.StatusOK || len(up.received()) != 2 || errors.Pruned != 0 {
			t.Errorf("pruned arm: status %d after %d upstream calls, %v errors; want the rescue's answer, no error", resp.StatusCode, len(up.received()), errors.Pruned)
		}
	}
}

// A Gemini conversation is counted under the model its path names, held
// out or pruned: a Gemini body names no model, and a conversation counted
// under none would drop out of the per-model table and the dollars.
func TestGeminiConversationsAreCountedUnderTheirModel(t *testing.T) {
	for _, share := range []float64{1, 0} {
		f := &fakeGeminiAPI{upstream: &recorder{}, retriever: &recorder{}, keepLine: `button "Add to cart"`, firstSeen: make(chan struct{})}
		close(f.firstSeen)
		var tally *holdout.Tally
		var h *holdout.Holdout
		ended := &conversations{}
		gw := geminiPruningGateway(t, f, withHoldout(share, &tally, &h, ended))
		for range 2 {
			resp := post(t, gw.URL+"/v1beta/models/gemini-2.5-flash:generateContent", geminiPage(t), map[string]string{"X-Goog-Api-Key": "AIza-client", "Content-Type": "application/json"})
			io.Copy(io.Discard, resp.Body)
		}
		gw.settle()
		h.Flush()
		wantPricedConversation(t, share, ended, "gemini-2.5-flash", 2)
	}
}

// wantPricedConversation requires ended to hold one conversation, of model
// and steps, priced.
func wantPricedConversation(t *testing.T, share float64, ended *conversations, model string, steps int) {
	t.Helper()
	if len(ended.ended) != 1 {
		t.Fatalf("share %v: %d conversations, want 1", share, len(ended.ended))
	}
	if c := ended.ended[0]; c.Model != model || c.Steps != steps || !c.Priced || c.USD <= 0 {
		t.Errorf("share %v: conversation of model %q, %d steps, priced %v, $%v; want %s, %d steps, priced", share, c.Model, c.Steps, c.Priced, c.USD, model, steps)
	}
}

// What the holdout keeps of a client's names is cut: a 1 MB model name and
// User-Agent cost an open conversation a few dozen bytes. The model is the
// one the pipeline read, as in the gateway.
func TestHoldoutKeepsNamesCut(t *testing.T) {
	var tally *holdout.Tally
	var h *holdout.Holdout
	ended := &conversations{}
	pruner := prune.New(prune.Config{RetrieverModel: "gpt-4.1-mini"}, nil, nil) // the body holds no page to prune
	gw := newGateway(t, nil, withHoldout(0.5, &tally, &h, ended), func(o *gatewayOptions) { o.Pruner = pruner })
	long := strings.Repeat("x", 1<<20)
	body := fmt.Appendf(nil, `{"model":%q,"messages":[{"role":"user","content":"Book a room."}]}`, long)
	io.Copy(io.Discard, post(t, gw.URL+"/v1/chat/completions", body, map[string]string{"User-Agent": long}).Body)
	gw.settle()
	h.Flush()
	if len(ended.ended) != 1 {
		t.Fatalf("%d conversations, want 1", len(ended.ended))
	}
	if c := ended.ended[0]; len(c.Model) > focusgate.MaxNameBytes || len(c.Agent) > focusgate.MaxNameBytes || !strings.HasPrefix(c.Model, "xxxx") {
		t.Errorf("kept a model of %d bytes and an agent of %d, want at most %d each", len(c.Model), len(c.Agent), focusgate.MaxNameBytes)
	}
}

// A step skipped before the pipeline read its model (here: the inspection
// budget is full) is priced all the same when its body names the model
// after the conversation, as the Python SDKs write it: a step without a
// model would leave its whole conversation out of the dollar comparison,
// in whichever arm it is.
func TestBusyStepsArePricedByTheModelNamedLast(t *testing.T) {
	for _, share := range []float64{0, 1} {
		var tally *holdout.Tally
		var h *holdout.Holdout
		ended := &conversations{}
		gw := newGateway(t, usageUpstream(&recorder{}), withHoldout(share, &tally, &h, ended), func(o *gatewayOptions) {
			o.Pruner = prune.New(prune.Config{RetrieverModel: "gpt-4.1-mini"}, nil, nil)
			o.InspectBudgetBytes = 1 << 10
		})
		body := fmt.Appendf(nil, `{"messages":[{"role":"user","content":%q}],"model":"gpt-4.1"}`, "Book a room. "+strings.Repeat("The hotel's page. ", 400))
		if m := detect.LeadingModel(body); m != "" {
			t.Fatalf("the body names its model among its leading members (%q); the test needs it last", m)
		}
		for range 2 {
			resp := post(t, gw.URL+"/v1/chat/completions", body, nil)
			io.Copy(io.Discard, resp.Body)
			if got := resp.Header.Get(proxy.HeaderStatus); share == 0 && got != "skipped; reason=busy" {
				t.Fatalf("share %v: status %q, want skipped; reason=busy", share, got)
			}
		}
		gw.settle()
		h.Flush()
		wantPricedConversation(t, share, ended, "gpt-4.1", 2)
	}
}
