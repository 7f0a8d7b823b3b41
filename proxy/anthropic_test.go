package proxy_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// anthropicGateway is a gateway whose OpenAI upstream and Anthropic upstream
// are two recorders, so that a test sees which one a request reached.
type anthropicGateway struct {
	*gateway
	anthropic *recorder
}

func newAnthropicGateway(t *testing.T, handler http.HandlerFunc, configure ...func(*gatewayOptions)) *anthropicGateway {
	t.Helper()
	rec := &recorder{}
	if handler == nil {
		handler = func(w http.ResponseWriter, r *http.Request) {
			rec.record(r)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"type":"message"}`)
		}
	}
	up := httptest.NewServer(handler)
	t.Cleanup(up.Close)
	base, _ := url.Parse(up.URL)
	gw := newGateway(t, nil, append([]func(*gatewayOptions){func(o *gatewayOptions) { o.AnthropicUpstream = base }}, configure...)...)
	return &anthropicGateway{gateway: gw, anthropic: rec}
}

const claudeCodeBody = `{"model":"claude-sonnet-4-5","max_tokens":32000,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`

// Claude Code's requests reach the Anthropic upstream with their path, query
// string, version headers and body as they came; other requests that speak
// the Anthropic API follow them there, and the rest go to the OpenAI one. A
// client that posts /messages (the AI SDK's Anthropic provider with the
// gateway's bare URL) reaches Anthropic's /v1/messages.
func TestAnthropicRequestsReachTheAnthropicUpstream(t *testing.T) {
	gw := newAnthropicGateway(t, nil)
	headers := map[string]string{"anthropic-version": "2023-06-01", "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14", "x-api-key": "sk-ant-client"}
	for _, tt := range []struct{ path, wantPath, wantQuery string }{
		{"/v1/messages?beta=true", "/v1/messages", "beta=true"},
		{"/v1/messages/count_tokens?beta=true", "/v1/messages/count_tokens", "beta=true"},
		{"/v1/messages/batches", "/v1/messages/batches", ""},
		{"/v1/models?limit=5", "/v1/models", "limit=5"},
		// The AI SDK's Anthropic provider, given the gateway's bare URL.
		{"/messages", "/v1/messages", ""},
		{"/messages/count_tokens?beta=true", "/v1/messages/count_tokens", "beta=true"},
	} {
		resp := post(t, gw.URL+tt.path, []byte(claudeCodeBody), headers)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", tt.path, resp.StatusCode)
		}
		got := gw.anthropic.last(t)
		if got.Path != tt.wantPath || got.RawQuery != tt.wantQuery || string(got.Body) != claudeCodeBody {
			t.Errorf("%s reached the Anthropic upstream as %s?%s with %q", tt.path, got.Path, got.RawQuery, got.Body)
		}
		for k, v := range headers {
			if g := got.Header.Get(k); g != v {
				t.Errorf("%s: %s = %q upstream, want %q", tt.path, k, g, v)
			}
		}
	}
	post(t, gw.URL+"/v1/embeddings", []byte(`{}`), nil)
	if got := gw.upstream.last(t); got.Path != "/v1/embeddings" {
		t.Errorf("a request without anthropic-version reached %q, want the OpenAI upstream", got.Path)
	}
}

// The Anthropic key is sent as x-api-key, and only when the client sends no
// credential of its own; the OpenAI upstream key never goes to Anthropic.
func TestAnthropicUpstreamKey(t *testing.T) {
	gw := newAnthropicGateway(t, nil, func(o *gatewayOptions) {
		o.AnthropicAPIKey, o.UpstreamAPIKey = "sk-ant-gateway", "sk-openai-gateway"
	})
	for _, tt := range []struct {
		name             string
		header           map[string]string
		wantKey, wantAut string
	}{
		{"no credential", nil, "sk-ant-gateway", ""},
		{"client x-api-key", map[string]string{"x-api-key": "sk-ant-client"}, "sk-ant-client", ""},
		{"client bearer token (ANTHROPIC_AUTH_TOKEN)", map[string]string{"Authorization": "Bearer oauth-client"}, "", "Bearer oauth-client"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			post(t, gw.URL+"/v1/messages", []byte(claudeCodeBody), tt.header)
			got := gw.anthropic.last(t)
			if got.Header.Get("X-Api-Key") != tt.wantKey || got.Header.Get("Authorization") != tt.wantAut {
				t.Errorf("upstream x-api-key %q, Authorization %q; want %q, %q", got.Header.Get("X-Api-Key"), got.Header.Get("Authorization"), tt.wantKey, tt.wantAut)
			}
		})
	}
}

// Anthropic's SSE passes event by event: the client reads the first event
// before the upstream writes the second.
func TestAnthropicStreamsAreFlushedEventByEvent(t *testing.T) {
	firstSeen := make(chan struct{})
	gw := newAnthropicGateway(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\"}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-firstSeen:
		case <-r.Context().Done():
			return
		case <-time.After(time.Minute):
			return // the client never saw the first event: the test fails below
		}
		io.WriteString(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	})
	resp := post(t, gw.URL+"/v1/messages?beta=true", []byte(claudeCodeBody), map[string]string{"anthropic-version": "2023-06-01"})
	rd := bufio.NewReader(resp.Body)
	for _, want := range []string{"event: message_start\n", "data: {\"type\":\"message_start\"}\n"} {
		if line, err := rd.ReadString('\n'); err != nil || line != want {
			t.Fatalf("got %q, %v; want %q", line, err, want)
		}
	}
	close(firstSeen)
	if rest, _ := io.ReadAll(rd); string(rest) != "\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n" {
		t.Errorf("rest of stream: %q", rest)
	}
}

// checkAnthropicError asserts Anthropic's error shape and type.
func checkAnthropicError(t *testing.T, body []byte, wantType string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Type != "error" || e.Error.Type != wantType || e.Error.Message == "" {
		t.Errorf("error body %s: want Anthropic's shape with type %s", body, wantType)
	}
}

// focusgate's own errors on the Anthropic routes come in Anthropic's shape.
func TestAnthropicErrorShapes(t *testing.T) {
	t.Run("413", func(t *testing.T) {
		gw := newAnthropicGateway(t, nil, func(o *gatewayOptions) { o.MaxBodyBytes = 64 })
		resp := post(t, gw.URL+"/v1/messages", []byte(claudeCodeBody), nil)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d, want 413", resp.StatusCode)
		}
		checkAnthropicError(t, readBody(t, resp), "request_too_large")
	})
	t.Run("502", func(t *testing.T) {
		gw := newGateway(t, nil, func(o *gatewayOptions) { o.AnthropicUpstream = &url.URL{Scheme: "http", Host: "127.0.0.1:1"} })
		resp := post(t, gw.URL+"/v1/messages", []byte(claudeCodeBody), nil)
		if resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("status %d, want 502", resp.StatusCode)
		}
		checkAnthropicError(t, readBody(t, resp), "api_error")
	})
	t.Run("504", func(t *testing.T) {
		release := make(chan struct{})
		gw := newAnthropicGateway(t, func(w http.ResponseWriter, r *http.Request) {
			<-release
		}, func(o *gatewayOptions) { o.UpstreamTimeout = 50 * time.Millisecond })
		// Registered after the upstream's Close, so it runs first.
		t.Cleanup(func() { close(release) })
		resp := post(t, gw.URL+"/v1/messages", []byte(claudeCodeBody), nil)
		if resp.StatusCode != http.StatusGatewayTimeout {
			t.Fatalf("status %d, want 504", resp.StatusCode)
		}
		checkAnthropicError(t, readBody(t, resp), "timeout_error")
	})
	t.Run("OpenAI routes keep OpenAI's shape", func(t *testing.T) {
		gw := newAnthropicGateway(t, nil, func(o *gatewayOptions) { o.MaxBodyBytes = 8 })
		resp := post(t, gw.URL+"/v1/chat/completions", []byte(`{"model":"gpt-4.1","messages":[]}`), nil)
		checkOpenAIError(t, readBody(t, resp), "request_too_large")
	})
}

// With gateway keys, Claude Code authenticates with a gateway key in
// x-api-key (ANTHROPIC_API_KEY) or as a bearer token (ANTHROPIC_AUTH_TOKEN);
// the key never leaves the gateway, the Anthropic key goes upstream as
// x-api-key, and a missing or wrong key gets Anthropic's 401 with no upstream
// call.
func TestGatewayKeysOnTheAnthropicRoutes(t *testing.T) {
	f, _ := openKeys(t, teamKeys)
	gw := newKeyedGateway(t, f, func(o *gatewayOptions) { o.AnthropicAPIKey = "sk-ant-gateway" })
	for _, h := range []map[string]string{
		{"x-api-key": aliceKey},
		{"Authorization": "Bearer " + aliceKey},
	} {
		resp := post(t, gw.URL+"/v1/messages?beta=true", []byte(claudeCodeBody), h)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%v: status %d", h, resp.StatusCode)
		}
		got := gw.upstream.last(t)
		if got.Header.Get("X-Api-Key") != "sk-ant-gateway" || got.Header.Get("Authorization") != "" {
			t.Errorf("%v: upstream x-api-key %q, Authorization %q; want the Anthropic key only", h, got.Header.Get("X-Api-Key"), got.Header.Get("Authorization"))
		}
		for name, values := range got.Header {
			for _, v := range values {
				if strings.Contains(v, aliceKey) {
					t.Errorf("the gateway key reached the upstream in %s", name)
				}
			}
		}
	}
	before := gw.upstream.n.Load()
	for _, h := range []map[string]string{nil, {"x-api-key": "sk-ant-unknown"}, {"x-api-key": aliceKey[:len(aliceKey)-1]}} {
		resp := post(t, gw.URL+"/v1/messages", []byte(claudeCodeBody), h)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%v: status %d, want 401", h, resp.StatusCode)
		}
		checkAnthropicError(t, readBody(t, resp), "authentication_error")
	}
	if n := gw.upstream.n.Load(); n != before {
		t.Errorf("the upstream received %d requests without a valid gateway key", n-before)
	}
}
