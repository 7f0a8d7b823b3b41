package proxy_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/focusgate/focusgate"
)

// rescueAPI is one API's side of the context-window tests: a tool loop of
// pages in its shape, where it is sent, and how its upstream refuses a
// request that does not fit.
type rescueAPI struct {
	name string
	path string
	// streamPath, when set, is where the API's streamed requests go
	// (Gemini streams on a route of its own, not by a member of the body).
	streamPath string
	header     map[string]string
	refusal    string
	body       func(t *testing.T, pages []string, stream bool) []byte
}

var rescueAPIs = []rescueAPI{
	{
		name: "chat", path: "/v1/chat/completions",
		refusal: `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		body: func(t *testing.T, pages []string, stream bool) []byte {
			msgs := []any{map[string]any{"role": "user", "content": "Order a standard laptop with the default configuration"}}
			for i, pg := range pages {
				id := string(rune('a' + i))
				msgs = append(msgs,
					map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "snapshot", "arguments": "{}"}}}},
					map[string]any{"role": "tool", "tool_call_id": id, "content": pg})
			}
			return marshal(t, map[string]any{"model": "gpt-4.1", "stream": stream, "messages": msgs})
		},
	},
	{
		name: "responses", path: "/v1/responses",
		refusal: `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`,
		body: func(t *testing.T, pages []string, stream bool) []byte {
			input := []any{map[string]any{"role": "user", "content": "Order a standard laptop with the default configuration"}}
			for i, pg := range pages {
				id := "call_" + string(rune('a'+i))
				input = append(input,
					map[string]any{"type": "function_call", "call_id": id, "name": "snapshot", "arguments": "{}"},
					map[string]any{"type": "function_call_output", "call_id": id, "output": pg})
			}
			return marshal(t, map[string]any{"model": "gpt-4.1", "stream": stream, "input": input})
		},
	},
	{
		name: "messages", path: "/v1/messages", header: map[string]string{"anthropic-version": "2023-06-01"},
		refusal: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 214511 tokens > 200000 maximum"},"request_id":"req_011CRescue"}`,
		body: func(t *testing.T, pages []string, stream bool) []byte {
			msgs := []any{map[string]any{"role": "user", "content": "Order a standard laptop with the default configuration"}}
			for i, pg := range pages {
				id := "toolu_" + string(rune('a'+i))
				msgs = append(msgs,
					map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "snapshot", "input": map[string]any{}}}},
					map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": pg}}})
			}
			return marshal(t, map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": stream, "messages": msgs})
		},
	},
	{
		name: "gemini", path: "/v1beta/models/gemini-2.5-flash:generateContent",
		streamPath: "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
		refusal:    `{"error":{"code":400,"message":"The input token count (1139805) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`,
		body: func(t *testing.T, pages []string, stream bool) []byte {
			contents := []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Order a standard laptop with the default configuration"}}}}
			for _, pg := range pages {
				contents = append(contents,
					map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "snapshot", "args": map[string]any{}}}}},
					map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "snapshot", "response": map[string]any{"output": pg}}}}})
			}
			return marshal(t, map[string]any{"contents": contents, "generationConfig": map[string]any{"temperature": 0}})
		},
	},
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// windowUpstream refuses, in its API's shape, every body over limit bytes,
// and answers the others, streamed when they ask for it.
type windowUpstream struct {
	api   rescueAPI
	limit int

	mu     sync.Mutex
	bodies [][]byte
}

func (u *windowUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Header.Get("Content-Encoding") == "gzip" {
		// As the providers do: the window holds the decoded request.
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if body, err = io.ReadAll(zr); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	u.mu.Lock()
	u.bodies = append(u.bodies, body)
	u.mu.Unlock()
	if len(body) > u.limit {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req-refused")
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			// As the providers do for a client that accepts it.
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(http.StatusBadRequest)
			zw := gzip.NewWriter(w)
			io.WriteString(zw, u.api.refusal)
			zw.Close()
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, u.api.refusal)
		return
	}
	if bytes.Contains(body, []byte(`"stream":true`)) || r.URL.Query().Get("alt") == "sse" {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{"data: {\"n\":1}\n\n", "data: {\"n\":2}\n\n"} {
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"ok":true}`)
}

func (a rescueAPI) url(gateway string, stream bool) string {
	if stream && a.streamPath != "" {
		return gateway + a.streamPath
	}
	return gateway + a.path
}

func (u *windowUpstream) received() [][]byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([][]byte(nil), u.bodies...)
}

// rescuer stands in for the pipeline in the rescue tests: it hands a body
// back as it came, and, asked for a rescue, the body it was given for that
// (every page cut to a few lines) as Rescued, or, with none, the body again
// with nothing to prune. What the pipeline prunes in a rescue is specified
// in package pipeline; here, what the gateway does with it.
type rescuer struct {
	rescued []byte

	mu   sync.Mutex
	reqs []focusgate.Request
}

var _ focusgate.Rewriter = (*rescuer)(nil)

func (r *rescuer) Rewrite(_ context.Context, req focusgate.Request) ([]byte, focusgate.Outcome) {
	kept := req
	kept.Body = bytes.Clone(req.Body) // the body's memory is the gateway's once Rewrite returns
	r.mu.Lock()
	r.reqs = append(r.reqs, kept)
	r.mu.Unlock()
	out := focusgate.Outcome{API: req.API, Status: focusgate.StatusPruned, Pages: pages(1)}
	switch {
	case !req.Rescue:
		return req.Body, out
	case r.rescued == nil:
		out.Status, out.Reason, out.Rescue = focusgate.StatusSkipped, focusgate.ReasonNoObservation, focusgate.RescueNothingToPrune
		return req.Body, out
	default:
		out.Rescue = focusgate.RescueRescued
		return bytes.Clone(r.rescued), out // a body of its own, which the gateway reuses
	}
}

func (r *rescuer) requests() []focusgate.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]focusgate.Request(nil), r.reqs...)
}

// firstLines cuts every page to its first three lines, as a rescue might.
func firstLines(pages []string) []string {
	var cut []string
	for _, pg := range pages {
		lines := strings.SplitN(pg, "\n", 4)
		cut = append(cut, strings.Join(lines[:min(3, len(lines))], "\n"))
	}
	return cut
}

func rescuePages(t *testing.T) []string {
	t.Helper()
	var pages []string
	for _, name := range []string{"bgym-pr301_workarena_standard_laptop_form.txt", "bgym-pr301_workarena_ipad_pro_form.txt", "bgym-pr301_workarena_catalog.txt"} {
		b, err := os.ReadFile("../testdata/axtrees/" + name)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, string(b))
	}
	return pages
}

// newWindowGateway is the gateway in front of up, with rw for the pipeline.
func newWindowGateway(t *testing.T, up *windowUpstream, rw *rescuer) *gateway {
	t.Helper()
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	openai, _ := url.Parse(srv.URL + "/v1")
	base, _ := url.Parse(srv.URL)
	return newGateway(t, nil, func(o *gatewayOptions) {
		o.Providers = map[string]testUpstream{"openai": {URL: openai}, "anthropic": {URL: base}, "gemini": {URL: base}}
		o.Pipeline = rw
	})
}

// A conversation whose older pages have no stored selection overflows the
// model's window; the upstream refuses it in its own words, and focusgate
// sends it once more with every page pruned. The client gets that answer,
// streamed as usual, and the rescue is counted and said.
func TestARequestRefusedForItsLengthIsRescued(t *testing.T) {
	pages := rescuePages(t)
	for _, api := range rescueAPIs {
		for _, stream := range []bool{false, true} {
			name := api.name
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				body := api.body(t, pages, stream)
				// The first send holds the two older pages whole: more than
				// a conversation of those two pages alone.
				up := &windowUpstream{api: api, limit: len(api.body(t, pages[:2], stream))}
				rw := &rescuer{rescued: api.body(t, firstLines(pages), stream)}
				gw := newWindowGateway(t, up, rw)
				resp := post(t, api.url(gw.URL, stream), body, api.header)
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d (%s): want the rescued request's answer", resp.StatusCode, got)
				}
				if st := resp.Header.Get("X-Focusgate-Status"); st != "pruned; rescue=rescued" {
					t.Errorf("X-Focusgate-Status %q, want pruned; rescue=rescued", st)
				}
				if stream && string(got) != "data: {\"n\":1}\n\ndata: {\"n\":2}\n\n" {
					t.Errorf("streamed answer %q", got)
				}
				sent := up.received()
				if len(sent) != 2 {
					t.Fatalf("upstream calls: %d, want the refused one and one retry", len(sent))
				}
				if !bytes.Equal(sent[0], body) || !bytes.Equal(sent[1], rw.rescued) {
					t.Errorf("upstream got %d then %d bytes; want the body as sent, then the pipeline's rescue", len(sent[0]), len(sent[1]))
				}
				reqs := rw.requests()
				if len(reqs) != 2 || reqs[0].Rescue || !reqs[1].Rescue || !bytes.Equal(reqs[1].Body, body) || reqs[1].API != reqs[0].API {
					t.Errorf("the pipeline was asked %d times; want the request, then the same request with Rescue set", len(reqs))
				}
				if n := value(scrape(t, gw), "focusgate_context_rescues_total", map[string]string{"api": api.name, "outcome": "rescued"}); n != 1 {
					t.Errorf("focusgate_context_rescues_total{outcome=rescued} = %v, want 1", n)
				}
				if !strings.Contains(gw.logs.String(), "rescue=rescued") {
					t.Errorf("the log does not say the request was rescued:\n%s", gw.logs.String())
				}
			})
		}
	}
}

// A compressed request that the pipeline leaves whole goes as it came,
// compressed; refused for its length, it is rescued with the pruned body,
// decoded and without the Content-Encoding the first one carried.
func TestACompressedRequestIsRescuedDecoded(t *testing.T) {
	pages := rescuePages(t)
	api := rescueAPIs[0]
	body := api.body(t, pages, false)
	up := &windowUpstream{api: api, limit: len(api.body(t, pages[:2], false))}
	rw := &rescuer{rescued: api.body(t, firstLines(pages), false)}
	gw := newWindowGateway(t, up, rw)
	resp := post(t, api.url(gw.URL, false), compressors["gzip"](body), map[string]string{"Content-Encoding": "gzip"})
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Focusgate-Status") != "pruned; rescue=rescued" {
		t.Fatalf("status %d, %s (%s): want the rescued request's answer", resp.StatusCode, resp.Header.Get("X-Focusgate-Status"), got)
	}
	if sent := up.received(); len(sent) != 2 || !bytes.Equal(sent[0], body) || !bytes.Equal(sent[1], rw.rescued) {
		t.Errorf("upstream got %d requests; want the body as sent, then the pipeline's rescue", len(sent))
	}
}

// A client that accepts compressed answers gets the refusal compressed; it
// is read decoded, rescued all the same, and, when it cannot be, passed on
// compressed as it came.
func TestACompressedRefusalIsReadDecoded(t *testing.T) {
	pages := rescuePages(t)
	api := rescueAPIs[0]
	body := api.body(t, pages, false)
	gzipped := map[string]string{"Accept-Encoding": "gzip"}
	for _, tt := range []struct {
		name    string
		rescued []byte
		want    int
	}{
		{"rescued", api.body(t, firstLines(pages), false), http.StatusOK},
		{"nothing to prune", nil, http.StatusBadRequest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := &windowUpstream{api: api, limit: len(api.body(t, pages[:2], false))}
			gw := newWindowGateway(t, up, &rescuer{rescued: tt.rescued})
			resp := post(t, api.url(gw.URL, false), body, gzipped)
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
			if tt.want != http.StatusBadRequest {
				return
			}
			zr, err := gzip.NewReader(bytes.NewReader(got))
			if err != nil || resp.Header.Get("Content-Encoding") != "gzip" {
				t.Fatalf("the refusal reached the client as %q (Content-Encoding %q), want it compressed as it came", got, resp.Header.Get("Content-Encoding"))
			}
			if plain, _ := io.ReadAll(zr); string(plain) != api.refusal {
				t.Errorf("the refusal decodes to %q", plain)
			}
		})
	}
}

// When the pruned request does not fit either, or there was nothing to prune,
// the client gets the upstream's first refusal as it was sent; any other
// answer is never retried.
func TestRefusalsThatCannotBeRescuedReachTheClientUnchanged(t *testing.T) {
	pages := rescuePages(t)
	for _, api := range rescueAPIs {
		tests := []struct {
			name      string
			stream    bool
			body      []byte
			rescued   []byte // what the pipeline makes of the body in a rescue; nil: nothing
			limit     int
			refusal   string
			wantCalls int
			outcome   focusgate.Rescue
		}{
			{"still too long", true, api.body(t, pages, true), api.body(t, firstLines(pages), true), 100, api.refusal, 2, focusgate.RescueStillTooLong},
			{"nothing to prune", false, api.body(t, []string{"a short tool output, no page"}, false), nil, 100, api.refusal, 1, focusgate.RescueNothingToPrune},
			{"another 400", false, api.body(t, pages, false), api.body(t, firstLines(pages), false), 100, `{"error":{"message":"Invalid model","type":"invalid_request_error","code":"model_not_found"}}`, 1, ""},
		}
		for _, tt := range tests {
			t.Run(api.name+"/"+tt.name, func(t *testing.T) {
				a := api
				a.refusal = tt.refusal
				up := &windowUpstream{api: a, limit: tt.limit}
				gw := newWindowGateway(t, up, &rescuer{rescued: tt.rescued})
				resp := post(t, api.url(gw.URL, tt.stream), tt.body, api.header)
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusBadRequest || string(got) != tt.refusal || resp.Header.Get("X-Request-Id") != "req-refused" {
					t.Errorf("client got %d %q (X-Request-Id %q), want the upstream's refusal unchanged", resp.StatusCode, got, resp.Header.Get("X-Request-Id"))
				}
				if n := len(up.received()); n != tt.wantCalls {
					t.Errorf("upstream calls: %d, want %d", n, tt.wantCalls)
				}
				if tt.outcome != "" {
					if n := value(scrape(t, gw), "focusgate_context_rescues_total", map[string]string{"api": api.name, "outcome": string(tt.outcome)}); n != 1 {
						t.Errorf("focusgate_context_rescues_total{outcome=%s} = %v, want 1", tt.outcome, n)
					}
				}
			})
		}
	}
}

// Only a 400 is read for a rescue: a 429 or a 500 with the same words passes
// as it came, after one call.
func TestOtherStatusesAreNeverRetried(t *testing.T) {
	pages := rescuePages(t)
	api := rescueAPIs[0]
	for _, status := range []int{http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusRequestEntityTooLarge} {
		var n atomic.Int32
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			n.Add(1)
			w.WriteHeader(status)
			io.WriteString(w, api.refusal)
		}))
		base, _ := url.Parse(up.URL + "/v1")
		gw := newGateway(t, nil, func(o *gatewayOptions) {
			o.Upstream = base
			o.Pipeline = &rescuer{rescued: api.body(t, firstLines(pages), false)}
		})
		resp := post(t, gw.URL+api.path, api.body(t, pages, false), nil)
		resp.Body.Close()
		if resp.StatusCode != status || n.Load() != 1 {
			t.Errorf("status %d: client got %d after %d upstream calls, want it as it came after one", status, resp.StatusCode, n.Load())
		}
		up.Close()
	}
}
