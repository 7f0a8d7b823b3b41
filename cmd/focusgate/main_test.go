package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/focusgate/focusgate/cache/cachetest"
	"github.com/focusgate/focusgate/internal/redistest"
	"github.com/focusgate/focusgate/internal/testlog"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// process is the program started in-process by startGateway.
type process struct {
	URL   string
	logs  *testlog.Buffer
	stop  context.CancelFunc // what SIGTERM does
	hurry context.CancelFunc // what a second SIGTERM does
	done  chan struct{}      // closed when run has returned
	err   error              // run's result, once done is closed
}

// wait returns run's result, failing the test if run has not returned by
// the deadline.
func (p *process) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(within):
		t.Fatalf("run did not return within %s", within)
		return nil
	}
}

// startGateway runs the whole program in-process against env.
func startGateway(t *testing.T, env map[string]string) *process {
	t.Helper()
	addr := freeAddr(t)
	env["FOCUSGATE_ADDR"] = addr
	if _, ok := env["FOCUSGATE_SHUTDOWN_DELAY"]; !ok {
		env["FOCUSGATE_SHUTDOWN_DELAY"] = "0s" // tests that stop the gateway do not wait for load balancers
	}
	ctx, cancel := context.WithCancel(context.Background())
	hurry, hurried := context.WithCancel(context.Background())
	ctx = withHurry(ctx, hurry)
	p := &process{URL: "http://" + addr, logs: testlog.New(), stop: cancel, hurry: hurried, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.err = run(ctx, []string{"focusgate"}, func(k string) string { return env[k] }, nil, io.Discard, p.logs)
	}()
	t.Cleanup(func() {
		cancel()
		hurried()
		p.wait(t, time.Minute)
	})
	p.logs.WaitFor(t, "focusgate listening")
	return p
}

// fakeOpenAI plays the action model for an unmodified OpenAI client.
func fakeOpenAI(t *testing.T, seen chan<- *http.Request) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if seen != nil {
			seen <- r
		}
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[{"id":"gpt-4.1","object":"model","created":1,"owned_by":"openai"}]}`)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
			var req struct{ Stream bool }
			json.Unmarshal(body, &req)
			if !req.Stream {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"click('a12')"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			for _, tok := range []string{"click", "('a12')"} {
				fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4.1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", tok)
				w.(http.Flusher).Flush()
			}
			io.WriteString(w, "data: [DONE]\n\n")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestRunServesAnUnmodifiedOpenAIClient(t *testing.T) {
	up := fakeOpenAI(t, nil)
	gw := startGateway(t, map[string]string{"FOCUSGATE_UPSTREAM_URL": up.URL + "/v1"})

	cfg := openai.DefaultConfig("sk-test-secret")
	cfg.BaseURL = gw.URL + "/v1"
	client := openai.NewClientWithConfig(cfg)
	ctx := context.Background()
	req := openai.ChatCompletionRequest{
		Model:    "gpt-4.1",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "hello"}},
	}

	resp, err := client.CreateChatCompletion(ctx, req)
	if err != nil {
		t.Fatalf("chat completion: %v", err)
	}
	if got := resp.Choices[0].Message.Content; got != "click('a12')" {
		t.Errorf("chat completion content %q", got)
	}

	req.Stream = true
	stream, err := client.CreateChatCompletionStream(ctx, req)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	defer stream.Close()
	var got strings.Builder
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("stream recv: %v", err)
		}
		got.WriteString(chunk.Choices[0].Delta.Content)
	}
	if got.String() != "click('a12')" {
		t.Errorf("streamed content %q", got.String())
	}

	models, err := client.ListModels(ctx)
	if err != nil || len(models.Models) != 1 || models.Models[0].ID != "gpt-4.1" {
		t.Errorf("models: %+v, %v", models, err)
	}
	// An answer is sent before its access-log line is written.
	gw.logs.WaitUntil(t, "three access-log lines", func(logs string) bool { return strings.Count(logs, "msg=request") >= 3 })
	if strings.Contains(gw.logs.String(), "sk-test-secret") {
		t.Errorf("the API key reached the logs:\n%s", gw.logs.String())
	}
}

// On SIGTERM an open stream may finish within the grace period, new
// connections are refused, and run returns nil so the process exits 0.
func TestRunDrainsOpenStreamsOnShutdown(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "data: 2\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	gw := startGateway(t, map[string]string{
		"FOCUSGATE_UPSTREAM_URL":     up.URL + "/v1",
		"FOCUSGATE_SHUTDOWN_TIMEOUT": "20s",
	})

	resp, err := http.Post(gw.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, len("data: 1\n\n"))
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}

	gw.stop()
	gw.logs.WaitFor(t, "shutting down")
	select {
	case <-gw.done:
		t.Fatalf("run returned (%v) while a stream was still open", gw.err)
	default:
	}
	close(release)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "data: 2\n\ndata: [DONE]\n\n" {
		t.Errorf("the stream was cut during shutdown: %q, %v", rest, err)
	}
	if err := gw.wait(t, time.Minute); err != nil {
		t.Errorf("run returned %v after a clean shutdown", err)
	}
	// The bookkeeping still waiting when the server stopped is done, and its
	// lines written, before run returns.
	if logs := gw.logs.String(); !strings.Contains(logs, "msg=request method=POST path=/v1/chat/completions status=200") {
		t.Errorf("run returned without the stream's access log line:\n%s", logs)
	}
}

// endlessStream starts a gateway with env in front of an upstream whose
// stream never ends, and opens such a stream through it.
func endlessStream(t *testing.T, env map[string]string) *process {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(up.Close)
	env["FOCUSGATE_UPSTREAM_URL"] = up.URL + "/v1"
	gw := startGateway(t, env)
	resp, err := http.Post(gw.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	io.ReadFull(resp.Body, make([]byte, 4))
	return gw
}

// A stream that never ends is cut when the grace period is over.
func TestRunShutdownIsBounded(t *testing.T) {
	gw := endlessStream(t, map[string]string{"FOCUSGATE_SHUTDOWN_TIMEOUT": "200ms"})
	gw.stop()
	if err := gw.wait(t, time.Minute); err != nil {
		t.Errorf("run returned %v", err)
	}
}

// On SIGTERM /readyz reports draining while connections are still accepted,
// so that a load balancer stops sending traffic before it would be refused.
func TestRunReportsDrainingBeforeRefusingConnections(t *testing.T) {
	up := fakeOpenAI(t, nil)
	gw := startGateway(t, map[string]string{
		"FOCUSGATE_UPSTREAM_URL":     up.URL + "/v1",
		"FOCUSGATE_SHUTDOWN_DELAY":   "5s",
		"FOCUSGATE_SHUTDOWN_TIMEOUT": "20s",
	})
	gw.stop()
	gw.logs.WaitFor(t, "shutting down")
	// A new connection, not one kept alive from before the signal.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(gw.URL + "/readyz")
	if err != nil {
		t.Fatalf("/readyz refused during the drain delay: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "draining") {
		t.Errorf("/readyz during the drain delay: %d %s, want 503 draining", resp.StatusCode, body)
	}
	if err := gw.wait(t, 30*time.Second); err != nil {
		t.Errorf("run returned %v", err)
	}
}

// A request still waiting for the retriever when the gateway stops
// accepting connections goes out unpruned and gets its answer within the
// grace period, rather than nothing when the grace period ends.
func TestRunSendsRequestsWaitingForTheRetrieverOnAtShutdown(t *testing.T) {
	asked := make(chan struct{}, 1)
	retriever := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		asked <- struct{}{}
		<-r.Context().Done()
	}))
	t.Cleanup(retriever.Close)
	bodies := make(chan []byte, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(upstream.Close)
	gw := startGateway(t, map[string]string{
		"FOCUSGATE_UPSTREAM_URL":      upstream.URL + "/v1",
		"FOCUSGATE_RETRIEVER_URL":     retriever.URL + "/v1",
		"FOCUSGATE_RETRIEVER_TIMEOUT": "10m",
		"FOCUSGATE_SHUTDOWN_TIMEOUT":  "10m",
	})
	body, err := os.ReadFile("../../testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json")
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		resp *http.Response
		body []byte
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.Post(gw.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			answered <- answer{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		answered <- answer{resp, b, err}
	}()
	<-asked
	gw.stop()

	a := <-answered
	if a.err != nil {
		t.Fatalf("the waiting request got no answer: %v", a.err)
	}
	if st := a.resp.Header.Get("X-Focusgate-Status"); st != "failed-open; reason=shutdown" || string(a.body) != `{"ok":true}` {
		t.Errorf("got %d %q with status %q; want the upstream's answer, failed-open; reason=shutdown", a.resp.StatusCode, a.body, st)
	}
	if sent := <-bodies; !bytes.Equal(sent, body) {
		t.Error("the upstream did not receive the original request")
	}
	if err := gw.wait(t, 30*time.Second); err != nil {
		t.Errorf("run returned %v", err)
	}
}

func TestRunRejectsBadConfiguration(t *testing.T) {
	var stderr bytes.Buffer
	env := map[string]string{"FOCUSGATE_MODE": "shrink", "FOCUSGATE_RETRIEVER_TIMEOUT": "soon"}
	err := run(context.Background(), []string{"focusgate", "serve", "--upstream-url", "ftp://x"},
		func(k string) string { return env[k] }, nil, io.Discard, &stderr)
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	for _, name := range []string{"FOCUSGATE_MODE", "FOCUSGATE_RETRIEVER_TIMEOUT", "FOCUSGATE_UPSTREAM_URL"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
}

// Every problem of the settings is reported at once, each once and in
// words: values that do not parse, values out of bounds, and the tables of
// prices and context windows, inline and in files.
func TestRunReportsEveryProblemOnce(t *testing.T) {
	env := map[string]string{
		"FOCUSGATE_RETRIEVER_TIMEOUT":    "5parsecs",
		"FOCUSGATE_MODE":                 "shrink",
		"FOCUSGATE_PRICES":               `{"gpt-4.1": 2}`,
		"FOCUSGATE_PRICES_FILE":          "/nonexistent/prices.json",
		"FOCUSGATE_CONTEXT_WINDOWS":      `{"gpt-4.1": -5}`,
		"FOCUSGATE_CONTEXT_WINDOWS_FILE": "/nonexistent/windows.json",
		"FOCUSGATE_AZURE_DEPLOYMENTS":    "prod",
	}
	err := run(context.Background(), []string{"focusgate", "serve"}, func(k string) string { return env[k] }, nil, io.Discard, io.Discard)
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	msg := err.Error()
	for name := range env {
		if n := strings.Count(msg, name+":"); n != 1 {
			t.Errorf("%s is reported %d times, want once:\n%s", name, n, msg)
		}
	}
	for _, jargon := range []string{"pricing:", "strconv", "json: cannot", "unmarshal", "time:", "Go value", "focusgate.Price"} {
		if strings.Contains(msg, jargon) {
			t.Errorf("the message speaks of %q:\n%s", jargon, msg)
		}
	}
}

// A misspelt FOCUSGATE_ variable is warned about at start, with the setting
// it was likely meant for.
func TestRunWarnsAboutUnknownVariables(t *testing.T) {
	t.Setenv("FOCUSGATE_HOLDOUTT", "0.1")
	gw := startGateway(t, map[string]string{})
	gw.logs.WaitFor(t, "FOCUSGATE_HOLDOUTT is not a setting of focusgate and is ignored (did you mean FOCUSGATE_HOLDOUT?)")
}

func TestRunHelp(t *testing.T) {
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"focusgate", "serve", "--help"}, func(string) string { return "" }, nil, &stdout, io.Discard); err != nil {
		t.Fatalf("--help: %v", err)
	}
	for _, want := range []string{"FOCUSGATE_UPSTREAM_URL", "--retriever-timeout", `"20s"`} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("serve --help lacks %q:\n%s", want, stdout.String())
		}
	}
	if err := run(context.Background(), []string{"focusgate", "frobnicate"}, func(string) string { return "" }, nil, io.Discard, io.Discard); err == nil {
		t.Error("an unknown command was accepted")
	}
}

// The binary wires detection, the retriever, the cache and the splice: an
// agent's request reaches the action model pruned, and the same request a
// second time is served from the cache.
func TestRunPrunesWithTheConfiguredRetriever(t *testing.T) {
	var retrieverCalls atomic.Int32
	var mu sync.Mutex
	var gotKey string
	var gotCap struct {
		MaxTokens int `json:"max_tokens"`
	}
	retriever := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotKey = r.Header.Get("Authorization")
		json.NewDecoder(r.Body).Decode(&gotCap)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"<answer>[(1,3)]</answer>"}}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
		retrieverCalls.Add(1)
	}))
	t.Cleanup(retriever.Close)
	bodies := make(chan []byte, 2)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(upstream.Close)

	gw := startGateway(t, map[string]string{
		"FOCUSGATE_UPSTREAM_URL":         upstream.URL + "/v1",
		"FOCUSGATE_RETRIEVER_URL":        retriever.URL + "/v1",
		"FOCUSGATE_RETRIEVER_API_KEY":    "sk-retriever",
		"FOCUSGATE_RETRIEVER_MAX_TOKENS": "777",
		"FOCUSGATE_RETRIEVER_TIMEOUT":    "10m", // a busy machine must not turn a prune into a timeout
	})
	body, err := os.ReadFile("../../testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json")
	if err != nil {
		t.Fatal(err)
	}
	for i, wantCache := range []string{"miss", "hit"} {
		resp, err := http.Post(gw.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if st, c := resp.Header.Get("X-Focusgate-Status"), resp.Header.Get("X-Focusgate-Cache"); st != "pruned" || c != wantCache {
			t.Errorf("request %d: status %q, cache %q; want pruned, %s", i+1, st, c, wantCache)
		}
		sent := <-bodies
		if len(sent) >= len(body)/2 || !strings.Contains(string(sent), "lines pruned") {
			t.Errorf("request %d: the action model received %d of %d bytes, not the pruned tree", i+1, len(sent), len(body))
		}
	}
	if n := retrieverCalls.Load(); n != 1 {
		t.Errorf("retriever called %d times, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if gotKey != "Bearer sk-retriever" {
		t.Errorf("retriever Authorization %q, want the configured retriever key", gotKey)
	}
	if gotCap.MaxTokens != 777 {
		t.Errorf("retriever max_tokens %d, want the configured 777", gotCap.MaxTokens)
	}
}

// With Redis configured but down, the gateway starts, serves and reports the
// outage on /readyz without failing it.
func TestRunReportsRedisOnReadyz(t *testing.T) {
	srv := redistest.Start(t)
	up := fakeOpenAI(t, nil)
	gw := startGateway(t, map[string]string{
		"FOCUSGATE_UPSTREAM_URL": up.URL + "/v1",
		"FOCUSGATE_REDIS_URL":    srv.URL(),
		// A loaded machine must not make a healthy Redis look down.
		"FOCUSGATE_REDIS_TIMEOUT": cachetest.CallTimeout.String(),
	})
	readyz := func() (int, string) {
		resp, err := http.Get(gw.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Checks map[string]string }
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.Checks["redis"]
	}
	if code, redis := readyz(); code != http.StatusOK || redis != "ok" {
		t.Errorf("/readyz with Redis up: %d, redis %q", code, redis)
	}
	srv.Stop()
	// The outage is noticed by the next call to Redis: a request that
	// looks up a selection.
	body, _ := os.ReadFile("../../testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json")
	resp, err := http.Post(gw.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a request with Redis down failed: %d", resp.StatusCode)
	}
	if code, redis := readyz(); code != http.StatusOK || !strings.HasPrefix(redis, "down") {
		t.Errorf("/readyz with Redis down: %d, redis %q; want 200 and down", code, redis)
	}
}

func TestRunSaysWhichModelPairsCannotPay(t *testing.T) {
	up := fakeOpenAI(t, nil)
	gw := startGateway(t, map[string]string{
		"FOCUSGATE_UPSTREAM_URL":    up.URL + "/v1",
		"FOCUSGATE_RETRIEVER_MODEL": "gpt-4.1",
		"FOCUSGATE_PRICES":          `{"gpt-4.1": {"input": 2, "output": 8}, "cheap-action": {"input": 1, "output": 1}}`,
	})
	logs := gw.logs.String()
	for _, want := range []string{"gpt-4.1=4", "cheap-action", "gpt-4.1-mini", "reason=uneconomic"} {
		if !strings.Contains(logs, want) {
			t.Errorf("start-up logs lack %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "gpt-4.5") {
		t.Errorf("gpt-4.5 ($75) was listed as a model pruning cannot pay for:\n%s", logs)
	}
}

func TestRunRejectsBadPrices(t *testing.T) {
	for _, env := range []map[string]string{
		{"FOCUSGATE_PRICES": `{"gpt-4.1": 2}`},
		{"FOCUSGATE_PRICES_FILE": "/nonexistent/prices.json"},
	} {
		err := run(context.Background(), []string{"focusgate"}, func(k string) string { return env[k] }, nil, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "FOCUSGATE_PRICES") {
			t.Errorf("%v: error %v, want one naming the variable", env, err)
		}
	}
}

// A second SIGTERM ends the grace period at once: the open stream is cut and
// run returns, though the grace period would have lasted ten minutes.
func TestSecondSignalEndsTheGracePeriod(t *testing.T) {
	gw := endlessStream(t, map[string]string{
		"FOCUSGATE_SHUTDOWN_DELAY":   "5m",
		"FOCUSGATE_SHUTDOWN_TIMEOUT": "10m",
	})
	gw.stop()
	gw.logs.WaitFor(t, "shutting down")
	gw.hurry()
	if err := gw.wait(t, time.Minute); err != nil {
		t.Errorf("run returned %v", err)
	}
	if !strings.Contains(gw.logs.String(), "a second signal ended the grace period") {
		t.Errorf("the log does not say why the grace period ended:\n%s", gw.logs.String())
	}
}

// FOCUSGATE_PPROF_ADDR serves the profiles on loopback, and beyond it only
// behind the admin key.
func TestRunServesTheProfiler(t *testing.T) {
	addr := freeAddr(t)
	startGateway(t, map[string]string{"FOCUSGATE_PPROF_ADDR": addr, "FOCUSGATE_ADMIN_KEY": "admin-key-0123456789"})
	for key, want := range map[string]int{"": http.StatusUnauthorized, "admin-key-0123456789": http.StatusOK} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/debug/pprof/goroutine?debug=1", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || (want == http.StatusOK && !strings.Contains(string(body), "goroutine profile")) {
			t.Errorf("key %q: status %d, want %d", key, resp.StatusCode, want)
		}
	}
	err := run(context.Background(), []string{"focusgate"}, func(k string) string {
		return map[string]string{"FOCUSGATE_PPROF_ADDR": ":6060"}[k]
	}, nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "FOCUSGATE_PPROF_ADDR") {
		t.Errorf("a profiler open to other hosts without the admin key: %v, want a refusal", err)
	}
}
