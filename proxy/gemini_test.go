package proxy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/pipeline"
	"github.com/focusgate/focusgate/proxy"
	"github.com/focusgate/focusgate/prune"
)

// geminiGateway is a gateway whose OpenAI, Anthropic and Gemini upstreams
// are three recorders, so that a test sees which one a request reached.
type geminiGateway struct {
	*gateway
	anthropic, gemini *recorder
	// clouds are the upstreams of the cloud providers, by name.
	clouds map[string]*recorder
}

func newGeminiGateway(t *testing.T, gemini http.HandlerFunc, configure ...func(*gatewayOptions)) *geminiGateway {
	t.Helper()
	g := &geminiGateway{anthropic: &recorder{}, gemini: &recorder{}, clouds: map[string]*recorder{}}
	if gemini == nil {
		gemini = func(w http.ResponseWriter, r *http.Request) {
			g.gemini.record(r)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"candidates":[]}`)
		}
	}
	upstreams := map[string]testUpstream{}
	handlers := map[string]http.HandlerFunc{
		"anthropic": func(w http.ResponseWriter, r *http.Request) { g.anthropic.record(r) },
		"gemini":    gemini,
	}
	for _, name := range []string{"bedrock", "vertex", "azure"} {
		rec := &recorder{}
		g.clouds[name] = rec
		handlers[name] = func(w http.ResponseWriter, r *http.Request) { rec.record(r) }
	}
	for name, h := range handlers {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		u, _ := url.Parse(srv.URL)
		upstreams[name] = testUpstream{URL: u}
	}
	g.gateway = newGateway(t, nil, append([]func(*gatewayOptions){func(o *gatewayOptions) {
		upstreams["openai"] = testUpstream{URL: o.Upstream}
		o.Providers = upstreams
	}}, configure...)...)
	return g
}

// geminiPage is a Gemini CLI request body whose last turn is a Playwright
// MCP snapshot, as Gemini CLI sends it: the page in the function
// response's output, wrapped in <untrusted_context>.
func geminiPage(t *testing.T) []byte {
	t.Helper()
	page := string(readFile(t, "../detect/testdata/formats/playwright.txt"))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(map[string]any{
		"contents": []any{
			map[string]any{"role": "user", "parts": []any{
				map[string]any{"text": "<session_context>\nToday is Monday.\n</session_context>"},
				map[string]any{"text": "Open the shop and add the Summit Parka to the cart."},
			}},
			map[string]any{"role": "model", "parts": []any{
				map[string]any{"functionCall": map[string]any{"name": "browser_snapshot", "args": map[string]any{}}, "thoughtSignature": "c2ln"},
			}},
			map[string]any{"role": "user", "parts": []any{
				map[string]any{"functionResponse": map[string]any{"id": "browser_snapshot-1", "name": "browser_snapshot",
					"response": map[string]any{"output": "<untrusted_context>\n" + page + "\n</untrusted_context>"}}},
			}},
		},
		"systemInstruction": map[string]any{"role": "user", "parts": []any{map[string]any{"text": "You are an interactive CLI agent."}}},
		"generationConfig":  map[string]any{"temperature": 0, "thinkingConfig": map[string]any{"includeThoughts": true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Every Gemini request reaches the Gemini upstream, with its path and query
// as they came; no request of one API reaches another API's upstream.
func TestEachAPIsRequestsReachOnlyItsUpstream(t *testing.T) {
	gw := newGeminiGateway(t, nil)
	for _, tt := range []struct {
		method, path string
		header       map[string]string
		want         string // the provider whose upstream gets it
	}{
		{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", nil, "gemini"},
		{"POST", "/v1beta/models/gemini-2.5-flash:generateContent", nil, "gemini"},
		{"POST", "/v1beta/models/gemini-2.5-flash:countTokens", nil, "gemini"},
		{"POST", "/v1/models/gemini-2.5-pro:generateContent", nil, "gemini"},
		{"POST", "/v1/projects/acme/locations/us-central1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse", map[string]string{"Authorization": "Bearer ya29.token"}, "vertex"},
		{"POST", "/v1/projects/acme/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict", nil, "vertex"},
		{"POST", "/v1beta1/projects/acme/locations/global/publishers/anthropic/models/count-tokens:rawPredict", nil, "vertex"},
		{"GET", "/v1/projects/acme/locations/us-east5/publishers/google/models", nil, "vertex"},
		{"POST", "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream", map[string]string{"Anthropic-Version": "2023-06-01"}, "bedrock"},
		{"POST", "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse", nil, "bedrock"},
		{"POST", "/model/us.anthropic.claude-haiku-4-5-20251001-v1:0/count-tokens", nil, "bedrock"},
		{"POST", "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21", map[string]string{"Api-Key": "az"}, "azure"},
		{"POST", "/openai/responses?api-version=preview", nil, "azure"},
		{"POST", "/openai/v1/chat/completions", nil, "azure"},
		{"GET", "/openai/v1/models", nil, "azure"},
		{"POST", "/v1beta/models/gemini-embedding-001:embedContent", nil, "gemini"},
		{"GET", "/v1beta/models", nil, "gemini"},
		{"GET", "/v1/models", map[string]string{"X-Goog-Api-Key": "AIza-client"}, "gemini"},
		{"POST", "/v1/chat/completions", nil, "openai"},
		{"POST", "/v1/responses", nil, "openai"},
		{"GET", "/v1/models", nil, "openai"},
		{"POST", "/v1/models/ft:gpt-4.1:acme::x1:retrieve", nil, "openai"},
		{"POST", "/v1/messages?beta=true", nil, "anthropic"},
		{"GET", "/v1/models", map[string]string{"Anthropic-Version": "2023-06-01"}, "anthropic"},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			got := map[string]*recorder{"openai": gw.upstream, "anthropic": gw.anthropic, "gemini": gw.gemini}
			maps.Copy(got, gw.clouds)
			before := map[string]int{}
			for name, rec := range got {
				before[name] = rec.count()
			}
			req, _ := http.NewRequest(tt.method, gw.URL+tt.path, strings.NewReader(`{}`))
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			for name, rec := range got {
				want := before[name]
				if name == tt.want {
					want++
				}
				if rec.count() != want {
					t.Errorf("the %s upstream received %d requests, want %d", name, rec.count()-before[name], want-before[name])
				}
			}
			path, query, _ := strings.Cut(tt.path, "?")
			path, _ = url.PathUnescape(path)
			if r := got[tt.want].last(t); r.Path != path || r.RawQuery != query {
				t.Errorf("reached %s?%s, want %s", r.Path, r.RawQuery, tt.path)
			}
		})
	}
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.reqs)
}

// fakeGeminiAPI plays both the action model (streamGenerateContent,
// countTokens) and the retriever (generateContent of the retriever model):
// the retriever keeps the lines holding keepLine; a stream's second event
// waits until the client has read the first.
type fakeGeminiAPI struct {
	upstream, retriever *recorder
	keepLine            string
	firstSeen           chan struct{}
}

func (f *fakeGeminiAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.Contains(r.URL.Path, "flash-lite:generateContent") {
		got := f.retriever.record(r)
		var req struct {
			Contents []struct {
				Parts []struct{ Text string } `json:"parts"`
			} `json:"contents"`
		}
		json.Unmarshal(got.Body, &req)
		prompt := req.Contents[len(req.Contents)-1].Parts[0].Text
		var ranges []string
		for i, l := range numberedLines(prompt) {
			if i == 0 || strings.Contains(l, f.keepLine) {
				ranges = append(ranges, fmt.Sprintf("(%d,%d)", i+1, i+1))
			}
		}
		answer, _ := json.Marshal("<answer>[" + strings.Join(ranges, ", ") + "]</answer>")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":%s}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":5000,"candidatesTokenCount":20}}`, answer)
		return
	}
	f.upstream.record(r)
	switch {
	case strings.HasSuffix(r.URL.Path, ":countTokens"):
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"totalTokens":42}`)
	case strings.HasSuffix(r.URL.Path, ":streamGenerateContent"):
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Clicking\"}]}}]}\r\n\r\n")
		w.(http.Flusher).Flush()
		select {
		case <-f.firstSeen:
		case <-r.Context().Done():
			return
		case <-time.After(time.Minute):
			return // the client never saw the first event: the test fails
		}
		io.WriteString(w, "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\" Add to cart.\"}]},\"finishReason\":\"STOP\"}]}\r\n\r\n")
	default:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}]}`)
	}
}

// geminiPruningGateway is focusgate with real detection and pruning of
// Gemini requests, through a Gemini retriever at the fake Gemini API.
func geminiPruningGateway(t *testing.T, f *fakeGeminiAPI, configure ...func(*gatewayOptions)) *geminiGateway {
	t.Helper()
	api := httptest.NewServer(f)
	t.Cleanup(api.Close)
	pruner := prune.New(prune.Config{RetrieverModel: "gemini-2.5-flash-lite", MinTokens: 1000, UseHistory: true},
		mustRetriever(prune.RetrieverConfig{Speaks: focusgate.APIGemini, BaseURL: api.URL, Model: "gemini-2.5-flash-lite", Timeout: time.Minute}),
		cache.New(cache.NewMemory(1<<20, time.Hour), nil))
	return newGeminiGateway(t, nil, append([]func(*gatewayOptions){func(o *gatewayOptions) {
		u, _ := url.Parse(api.URL)
		o.Providers["gemini"] = testUpstream{URL: u, APIKey: o.Providers["gemini"].APIKey}
		o.Pruner, o.Mode, o.Variant, o.RetrieverModel = pruner, focusgate.ModeRemove, focusgate.VariantLine, "gemini-2.5-flash-lite"
		o.Retrievals = map[pipeline.RetrievalKey]pipelineRetrieval{{Provider: "gemini", API: focusgate.APIGemini}: {Pruner: pruner, RetrieverModel: "gemini-2.5-flash-lite", ClientKey: true}}
	}}, configure...)...)
}

// Gemini CLI's streamed request is pruned: the page keeps its target, every
// byte outside it reaches the upstream as it came (the query string
// included), the retriever is Gemini's generateContent called with the
// client's own Gemini key, and the answer streams back event by event.
func TestGeminiRequestsArePrunedAndStreamed(t *testing.T) {
	f := &fakeGeminiAPI{upstream: &recorder{}, retriever: &recorder{}, keepLine: `button "Add to cart"`, firstSeen: make(chan struct{})}
	gw := geminiPruningGateway(t, f)
	body := geminiPage(t)
	if !strings.Contains(string(body), `button \"Add to cart\"`) {
		t.Fatal("the test page has no target")
	}
	resp := post(t, gw.URL+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", body, map[string]string{"X-Goog-Api-Key": "AIza-client", "Content-Type": "application/json"})
	defer resp.Body.Close()
	if got := resp.Header.Get(proxy.HeaderStatus); got != "pruned" {
		t.Fatalf("%s = %q, want pruned\n%s", proxy.HeaderStatus, got, gw.logs.String())
	}
	rd := bufio.NewReader(resp.Body)
	if line, err := rd.ReadString('\n'); err != nil || !strings.Contains(line, `"Clicking"`) {
		t.Fatalf("first event %q, %v", line, err)
	}
	close(f.firstSeen)
	rest, _ := io.ReadAll(rd)
	if !strings.Contains(string(rest), "Add to cart.") {
		t.Errorf("the stream's rest: %q", rest)
	}

	sent := f.upstream.last(t)
	if sent.Path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || sent.RawQuery != "alt=sse" {
		t.Errorf("upstream got %s?%s", sent.Path, sent.RawQuery)
	}
	if got := sent.Header.Get("X-Goog-Api-Key"); got != "AIza-client" {
		t.Errorf("upstream key %q, want the client's", got)
	}
	if !json.Valid(sent.Body) || len(sent.Body) >= len(body)/2 {
		t.Fatalf("the upstream got %d bytes of %d, want valid JSON pruned to less than half", len(sent.Body), len(body))
	}
	start := bytes.Index(body, []byte("<untrusted_context>"))
	end := bytes.Index(body, []byte("</untrusted_context>"))
	if !bytes.HasPrefix(sent.Body, body[:start]) || !bytes.HasSuffix(sent.Body, body[end:]) {
		t.Error("bytes outside the function response's output changed")
	}
	for _, want := range []string{`button \"Add to cart\" [ref=e102]`, "lines pruned", `<untrusted_context>\n### Page`} {
		if !bytes.Contains(sent.Body, []byte(want)) {
			t.Errorf("the pruned request lacks %q", want)
		}
	}
	call := f.retriever.last(t)
	if call.Path != "/v1beta/models/gemini-2.5-flash-lite:generateContent" || call.Header.Get("X-Goog-Api-Key") != "AIza-client" {
		t.Errorf("retriever call to %s with key %q", call.Path, call.Header.Get("X-Goog-Api-Key"))
	}
	if !strings.Contains(string(call.Body), "add the Summit Parka to the cart") || strings.Contains(string(call.Body), "session_context") {
		t.Error("the retriever was not given the user's task as the goal")
	}
	gw.logs.WaitFor(t, "msg=request method=POST path=/v1beta/models/gemini-2.5-flash:streamGenerateContent status=200")
	if !strings.Contains(gw.logs.String(), "msg=observations status=pruned api=gemini model=gemini-2.5-flash") {
		t.Errorf("no outcome line for the Gemini request:\n%s", gw.logs.String())
	}
	if !regexp.MustCompile(`msg=request method=POST path=/v1beta/\S+ status=200 .* api=gemini`).MatchString(gw.logs.String()) {
		t.Errorf("the access log does not name the API:\n%s", gw.logs.String())
	}
	resp, err := http.Get(gw.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `route="gemini"`) {
		t.Error(`no metrics with route="gemini"`)
	}
}

// countTokens is a sizing request: a body that is one tool output passes
// through unchanged, as does a body without a page; a conversation is
// counted as it would be sent.
func TestGeminiCountTokens(t *testing.T) {
	f := &fakeGeminiAPI{upstream: &recorder{}, retriever: &recorder{}, keepLine: `button "Add to cart"`, firstSeen: make(chan struct{})}
	gw := geminiPruningGateway(t, f)
	var lone map[string]any
	json.Unmarshal(geminiPage(t), &lone)
	lone["contents"] = lone["contents"].([]any)[2:]
	loneBody, _ := json.Marshal(lone)
	for _, tt := range []struct {
		name   string
		body   []byte
		status string
	}{
		{"a lone tool output", loneBody, "skipped; reason=no-goal"},
		{"no page", []byte(`{"contents":[{"role":"user","parts":[{"text":"hello"}]}]}`), "skipped; reason=no-observation"},
		{"a conversation", geminiPage(t), "pruned"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, gw.URL+"/v1beta/models/gemini-2.5-flash:countTokens", tt.body, map[string]string{"X-Goog-Api-Key": "AIza-client"})
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if got := resp.Header.Get(proxy.HeaderStatus); got != tt.status {
				t.Errorf("%s = %q, want %q", proxy.HeaderStatus, got, tt.status)
			}
			if sent := f.upstream.last(t).Body; tt.status != "pruned" && !bytes.Equal(sent, tt.body) {
				t.Error("the body was changed")
			}
		})
	}
}

// The Gemini upstream key goes as x-goog-api-key, only when the client
// sends no credential of its own; no other provider's key goes to Gemini.
func TestGeminiUpstreamKey(t *testing.T) {
	gw := newGeminiGateway(t, nil, func(o *gatewayOptions) {
		o.Providers["gemini"] = testUpstream{URL: o.Providers["gemini"].URL, APIKey: "AIza-gateway"}
		o.Providers["openai"] = testUpstream{URL: o.Upstream, APIKey: "sk-openai-gateway"}
	})
	for _, tt := range []struct {
		name             string
		header           map[string]string
		query            string
		wantKey, wantAut string
		wantQuery        string
	}{
		{"no credential", nil, "", "AIza-gateway", "", ""},
		{"client x-goog-api-key", map[string]string{"X-Goog-Api-Key": "AIza-client"}, "", "AIza-client", "", ""},
		{"client ?key=", nil, "key=AIza-client", "", "", "key=AIza-client"},
		{"client bearer token (Vertex)", map[string]string{"Authorization": "Bearer ya29.client"}, "", "", "Bearer ya29.client", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := "/v1beta/models/gemini-2.5-flash:generateContent"
			if tt.query != "" {
				path += "?" + tt.query
			}
			post(t, gw.URL+path, []byte(`{"contents":[]}`), tt.header)
			got := gw.gemini.last(t)
			if got.Header.Get("X-Goog-Api-Key") != tt.wantKey || got.Header.Get("Authorization") != tt.wantAut || got.RawQuery != tt.wantQuery {
				t.Errorf("upstream x-goog-api-key %q, Authorization %q, query %q; want %q, %q, %q",
					got.Header.Get("X-Goog-Api-Key"), got.Header.Get("Authorization"), got.RawQuery, tt.wantKey, tt.wantAut, tt.wantQuery)
			}
		})
	}
}

// With gateway keys, a Gemini client presents its gateway key in any of the
// places Gemini clients put a key; it never reaches the upstream, where the
// Gemini upstream key takes its place. A missing or wrong key gets 401 in
// Google's error shape.
func TestGeminiGatewayKeys(t *testing.T) {
	f, _ := openKeys(t, teamKeys)
	g := &geminiGateway{gemini: &recorder{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { g.gemini.record(r) }))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	gw := newKeyedGateway(t, f, func(o *gatewayOptions) {
		o.Providers = map[string]testUpstream{"gemini": {URL: u, APIKey: "AIza-gateway"}}
	})
	const path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
	for _, tt := range []struct {
		name   string
		header map[string]string
		query  string
	}{
		{"x-goog-api-key", map[string]string{"X-Goog-Api-Key": aliceKey}, "alt=sse"},
		{"?key=", nil, "alt=sse&key=" + aliceKey},
		{"?key= first", nil, "key=" + aliceKey + "&alt=sse"},
		{"Authorization: Bearer", map[string]string{"Authorization": "Bearer " + aliceKey}, "alt=sse"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, gw.URL+path+"?"+tt.query, []byte(`{"contents":[]}`), tt.header)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			got := g.gemini.last(t)
			if got.RawQuery != "alt=sse" || got.Header.Get("X-Goog-Api-Key") != "AIza-gateway" || got.Header.Get("Authorization") != "" {
				t.Errorf("upstream query %q, x-goog-api-key %q, Authorization %q; want alt=sse and the Gemini upstream key alone",
					got.RawQuery, got.Header.Get("X-Goog-Api-Key"), got.Header.Get("Authorization"))
			}
			for name, vs := range got.Header {
				if strings.Contains(strings.Join(vs, " "), aliceKey) {
					t.Errorf("the gateway key reached the upstream in %s", name)
				}
			}
		})
	}
	if strings.Contains(gw.logs.String(), aliceKey) {
		t.Error("the gateway key is in the log")
	}
	for _, tt := range []struct {
		name   string
		header map[string]string
		query  string
	}{
		{"no key", nil, ""},
		{"a wrong x-goog-api-key", map[string]string{"X-Goog-Api-Key": "AIza-not-a-gateway-key-at-all"}, ""},
		{"a wrong ?key=", nil, "?key=AIza-not-a-gateway-key-at-all"},
	} {
		t.Run("refused: "+tt.name, func(t *testing.T) {
			before := g.gemini.count()
			resp := post(t, gw.URL+path+tt.query, []byte(`{"contents":[]}`), tt.header)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", resp.StatusCode)
			}
			checkGoogleError(t, body, 401, "UNAUTHENTICATED")
			if g.gemini.count() != before {
				t.Error("a refused request reached the upstream")
			}
		})
	}
}

// focusgate's own errors on Gemini routes are in Google's shape.
func TestGeminiErrorsAreGoogleShaped(t *testing.T) {
	gw := newGeminiGateway(t, nil, func(o *gatewayOptions) {
		o.MaxBodyBytes = 1 << 10
		o.Providers["gemini"] = testUpstream{URL: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}}
	})
	const path = "/v1beta/models/gemini-2.5-flash:generateContent"
	resp := post(t, gw.URL+path, bytes.Repeat([]byte("a"), 2<<10), nil)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d, want 413", resp.StatusCode)
	}
	checkGoogleError(t, body, 413, "INVALID_ARGUMENT")

	resp = post(t, gw.URL+path, []byte(`{"contents":[]}`), nil)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("status %d, want 502", resp.StatusCode)
	}
	checkGoogleError(t, body, 502, "UNAVAILABLE")
}

// checkGoogleError checks a body is Google's error shape,
// {"error":{"code":401,"message":"...","status":"UNAUTHENTICATED"}}.
func checkGoogleError(t *testing.T, body []byte, code int, status string) {
	t.Helper()
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != code || e.Error.Status != status || e.Error.Message == "" {
		t.Errorf("error body %s: want Google's shape with code %d and status %s", body, code, status)
	}
}

// A page Gemini CLI cut in the middle is two trees, the head and the tail,
// and the line that says what was cut reaches the model as it came. Both
// are the newest output and both are pruned, with or without PruneAll.
func TestGeminiTruncatedOutputKeepsItsMarker(t *testing.T) {
	page := string(readFile(t, "../detect/testdata/formats/playwright.txt"))
	cut := strings.Index(page, "\n  - main") + 1
	const marker = "... [12,345 characters omitted] ..."
	output := "Output too large. Showing first 8,000 and last 32,000 characters. For full output see: /tmp/gemini/tool-outputs/browser_snapshot_1.txt\n" +
		page[:cut] + "\n" + marker + "\n\n" + page[cut:]
	body, _ := json.Marshal(map[string]any{"contents": []any{
		map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Add the Summit Parka to the cart."}}},
		map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "browser_snapshot", "args": map[string]any{}}}}},
		map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "browser_snapshot", "response": map[string]any{"output": output}}}}},
	}})
	for _, all := range []bool{false, true} {
		t.Run(fmt.Sprintf("prune all %v", all), func(t *testing.T) {
			f := &fakeGeminiAPI{upstream: &recorder{}, retriever: &recorder{}, keepLine: `button "Add to cart"`, firstSeen: make(chan struct{})}
			gw := geminiPruningGateway(t, f, func(o *gatewayOptions) { o.PruneAll = all })
			resp := post(t, gw.URL+"/v1beta/models/gemini-2.5-flash:generateContent", body, map[string]string{"X-Goog-Api-Key": "AIza-client"})
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if got := resp.Header.Get(proxy.HeaderStatus); got != "pruned" {
				t.Fatalf("%s = %q, want pruned", proxy.HeaderStatus, got)
			}
			var sent struct {
				Contents []struct {
					Parts []struct {
						FunctionResponse struct {
							Response struct{ Output string } `json:"response"`
						} `json:"functionResponse"`
					} `json:"parts"`
				} `json:"contents"`
			}
			if err := json.Unmarshal(f.upstream.last(t).Body, &sent); err != nil {
				t.Fatal(err)
			}
			got := sent.Contents[2].Parts[0].FunctionResponse.Response.Output
			head, tail, ok := strings.Cut(got, "\n"+marker+"\n")
			if !ok {
				t.Fatalf("the marker line is gone:\n%s", got)
			}
			wantHead, _, _ := strings.Cut(output, "\n"+marker+"\n")
			if !strings.HasPrefix(head, "Output too large.") || !strings.Contains(tail, `button "Add to cart"`) || !strings.Contains(tail, "lines pruned") {
				t.Error("the header line or the target is gone, or the tail was not pruned")
			}
			if head == wantHead {
				t.Error("the head went out as it came: want it pruned as the tail is")
			}
		})
	}
}

// Each earlier turn of a Gemini conversation reaches the upstream
// byte-identical from one request to the next (Gemini's implicit prompt
// cache keeps hitting): the page pruned when it was the newest is pruned the
// same way again from its stored selection, without asking the retriever.
func TestGeminiEarlierTurnsStayByteIdentical(t *testing.T) {
	f := &fakeGeminiAPI{upstream: &recorder{}, retriever: &recorder{}, keepLine: `button "Add to cart"`, firstSeen: make(chan struct{})}
	gw := geminiPruningGateway(t, f)
	page := string(readFile(t, "../detect/testdata/formats/playwright.txt"))
	turn := func(i int, p string) []any {
		return []any{
			map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "browser_snapshot", "args": map[string]any{"step": i}}}}},
			map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "browser_snapshot",
				"response": map[string]any{"output": "<untrusted_context>\n" + p + "\n</untrusted_context>"}}}}},
		}
	}
	task := map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Add the Summit Parka to the cart."}}}
	first := append([]any{task}, turn(1, page)...)
	second := append(append([]any{task}, turn(1, page)...), turn(2, strings.ReplaceAll(page, "Summit Parka", "Summit Parka II"))...)
	var sent [][]byte
	for _, contents := range [][]any{first, second} {
		body, _ := json.Marshal(map[string]any{"contents": contents})
		resp := post(t, gw.URL+"/v1beta/models/gemini-2.5-flash:generateContent", body, map[string]string{"X-Goog-Api-Key": "AIza-client"})
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := resp.Header.Get(proxy.HeaderStatus); got != "pruned" {
			t.Fatalf("%s = %q, want pruned", proxy.HeaderStatus, got)
		}
		sent = append(sent, f.upstream.last(t).Body)
	}
	// The first request's bytes, but for its closing "]}", open the second's.
	prefix := sent[0][:len(sent[0])-2]
	if !bytes.HasPrefix(sent[1], prefix) {
		t.Error("the second request does not start with the first request's turns as they were sent")
	}
	if n := f.retriever.count(); n != 2 {
		t.Errorf("%d retriever calls, want 2: the older page's selection comes from the cache", n)
	}
}

// Spellings of a Gemini route that a lenient server reads as the route (an
// empty segment, a trailing slash, another case, a model named with its
// resource prefix twice) are inspected like the route, and go upstream as
// they came: no spelling escapes pruning.
func TestGeminiPathVariantsAreInspected(t *testing.T) {
	f := &fakeGeminiAPI{upstream: &recorder{}, retriever: &recorder{}, keepLine: `button "Add to cart"`, firstSeen: make(chan struct{})}
	close(f.firstSeen)
	gw := geminiPruningGateway(t, f)
	body := geminiPage(t)
	for _, path := range []string{
		"//v1beta/models/gemini-2.5-flash:generateContent",
		"/v1beta//models/gemini-2.5-flash:generateContent",
		"/v1beta/models/gemini-2.5-flash:generateContent/",
		"/V1BETA/models/gemini-2.5-flash:generateContent",
		"/v1beta/models/gemini-2.5-flash:generatecontent",
		"/v1beta/models/models/gemini-2.5-flash:generateContent",
	} {
		t.Run(path, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, gw.URL, bytes.NewReader(body))
			req.URL.Path, req.URL.RawPath = path, path
			req.Header.Set("X-Goog-Api-Key", "AIza-client")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if got := resp.Header.Get(proxy.HeaderStatus); got != "pruned" {
				t.Errorf("%s = %q, want pruned", proxy.HeaderStatus, got)
			}
			if got := f.upstream.last(t); got.Path != path || len(got.Body) >= len(body) {
				t.Errorf("the upstream got %s with %d bytes of %d; want the path as sent and the body pruned", got.Path, len(got.Body), len(body))
			}
		})
	}
}
