package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/config"
	clientkeys "github.com/focusgate/focusgate/internal/keys"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP trace endpoint that decodes the real
// protocol (protobuf ExportTraceServiceRequest, gzip or not) and keeps the
// spans.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	rcv := &otlpReceiver{}
	rcv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, _ := io.ReadAll(body)
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rcv.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				rcv.spans = append(rcv.spans, ss.Spans...)
			}
		}
		rcv.mu.Unlock()
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(rcv.Close)
	return rcv
}

func (rcv *otlpReceiver) named(prefix string) []*tracepb.Span {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range rcv.spans {
		if strings.HasPrefix(s.Name, prefix) {
			out = append(out, s)
		}
	}
	return out
}

func attr(s *tracepb.Span, key string) (string, int64) {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.GetStringValue(), a.Value.GetIntValue()
		}
	}
	return "", -1
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, a pruned request's trace holds the
// gateway's server span (continuing the caller's traceparent), detection,
// the cache look-up, the retriever call with its model and tokens (GenAI
// conventions) and the upstream call, whose span is the parent the upstream
// is told about in its traceparent.
func TestTracesOverOTLP(t *testing.T) {
	rcv := newOTLPReceiver(t)
	retriever := newFakeModel(t, neededElement)
	var upstreamTraceparent string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" {
			upstreamTraceparent = r.Header.Get("Traceparent")
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(upstream.Close)
	gw := startGateway(t, map[string]string{
		"FOCUSGATE_UPSTREAM_URL":      upstream.URL + "/v1",
		"FOCUSGATE_RETRIEVER_URL":     retriever.URL + "/v1",
		"FOCUSGATE_GEMINI_URL":        upstream.URL,
		"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL,
	})
	body, err := os.ReadFile("../../testdata/agents/playwright-mcp/chat/03-chat.json")
	if err != nil {
		t.Fatal(err)
	}
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest(http.MethodPost, gw.URL+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Traceparent", "00-"+traceID+"-"+parentID+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if st := resp.Header.Get("X-Focusgate-Status"); st != "pruned" {
		t.Fatalf("status %q, want pruned", st)
	}
	gemini, err := http.Post(gw.URL+"/v1beta/models/gemini-2.5-flash:generateContent", "application/json", strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	gemini.Body.Close()
	// Shutting down sends the spans still buffered.
	gw.stop()
	gw.wait(t, time.Minute)

	server := rcv.named("POST /v1/chat/completions")
	if len(server) != 1 {
		t.Fatalf("%d server spans, want 1", len(server))
	}
	s := server[0]
	if hex.EncodeToString(s.TraceId) != traceID || hex.EncodeToString(s.ParentSpanId) != parentID || s.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("server span in trace %x under %x (kind %v): want the caller's trace and span", s.TraceId, s.ParentSpanId, s.Kind)
	}
	if st, _ := attr(s, "focusgate.status"); st != "pruned" {
		t.Errorf("server span focusgate.status %q", st)
	}
	if route, _ := attr(s, "focusgate.route"); route != "chat" {
		t.Errorf("server span focusgate.route %q, want chat", route)
	}
	if g := rcv.named("POST /v1beta/models/{model}:generateContent"); len(g) != 1 {
		t.Errorf("%d server spans of the Gemini request, want 1", len(g))
	} else if route, _ := attr(g[0], "focusgate.route"); route != "gemini" {
		t.Errorf("the Gemini request's span: focusgate.route %q, want gemini", route)
	}
	if _, n := attr(s, "focusgate.tokens_before"); n <= 0 {
		t.Error("server span has no tokens before")
	}
	for _, name := range []string{"focusgate.detect", "focusgate.cache", "chat gpt-4.1-mini"} {
		if len(rcv.named(name)) != 1 {
			t.Errorf("%d spans named %q, want 1", len(rcv.named(name)), name)
		}
	}
	if chat := rcv.named("chat gpt-4.1-mini"); len(chat) == 1 {
		c := chat[0]
		if m, _ := attr(c, "gen_ai.request.model"); m != "gpt-4.1-mini" {
			t.Errorf("gen_ai.request.model %q", m)
		}
		if _, in := attr(c, "gen_ai.usage.input_tokens"); in != 100 {
			t.Errorf("gen_ai.usage.input_tokens %d, want the retriever's 100", in)
		}
		if op, _ := attr(c, "gen_ai.operation.name"); op != "chat" || hex.EncodeToString(c.TraceId) != traceID {
			t.Errorf("retriever span: operation %q, trace %x", op, c.TraceId)
		}
	}
	var client *tracepb.Span
	for _, sp := range rcv.named("POST") {
		if sp.Kind == tracepb.Span_SPAN_KIND_CLIENT && hex.EncodeToString(sp.TraceId) == traceID {
			client = sp
		}
	}
	if client == nil {
		t.Fatal("no client span for the upstream call")
	}
	want := "00-" + traceID + "-" + hex.EncodeToString(client.SpanId) + "-01"
	if upstreamTraceparent != want {
		t.Errorf("the upstream got traceparent %q, want %q (the upstream call's span as parent)", upstreamTraceparent, want)
	}
}

// No gateway key reaches a trace, however a client puts one in the path: a
// segment that is the key (a model, a project), ";key=", or a "#fragment",
// which net/http keeps in the path. Such a request is refused and reaches
// neither the upstream nor the dashboard; its span records no path.
func TestNoGatewayKeyReachesATrace(t *testing.T) {
	rcv := newOTLPReceiver(t)
	reached := make(chan string, 64)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		reached <- r.URL.Path
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(upstream.Close)
	path := filepath.Join(t.TempDir(), "keys")
	writeKeysFile(t, path, "alice:"+aliceKey+"\n"+clientkeys.Hash("bob", bobKey)+"\n")
	env := map[string]string{"FOCUSGATE_CLIENT_KEYS_FILE": path, "OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "FOCUSGATE_UPSTREAM_API_KEY": upstreamKey}
	for _, p := range focusgate.Providers {
		env[config.Prefix+p.URL.Name] = upstream.URL
	}
	gw := startGateway(t, env)
	addr := strings.TrimPrefix(gw.URL, "http://")
	for _, key := range []string{aliceKey, bobKey} {
		for _, target := range []string{
			"/v1beta/models/gemini-2.5-flash:generateContent#key=" + key,
			"/v1beta/models/gemini-2.5-flash:generateContent;key=" + key,
			"/v1beta/models/" + key + ":generateContent",
			"/v1/projects/" + key + "/locations/us-east5/publishers/google/models/gemini-2.5-flash:generateContent",
			"/model/" + key + "/invoke",
			"/openai/deployments/" + key + "/chat/completions?api-version=1",
			"/v1/files/" + url.PathEscape(key),
		} {
			for _, auth := range []string{"", "Authorization: Bearer " + aliceKey + "\r\n"} {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				body := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
				fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: gw\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", target, auth, len(body), body)
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Fatalf("%s: %v", target, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				conn.Close()
				if resp.StatusCode != http.StatusBadRequest {
					t.Errorf("%s (%q): status %d, want 400", target, auth, resp.StatusCode)
				}
			}
		}
	}
	gw.stop()
	gw.wait(t, time.Minute)
	select {
	case p := <-reached:
		t.Errorf("a request whose path held a gateway key reached the upstream: %s", p)
	default:
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.spans) == 0 {
		t.Fatal("no span was exported")
	}
	for _, s := range rcv.spans {
		text := s.Name
		for _, a := range s.Attributes {
			text += " " + a.Value.GetStringValue()
		}
		for _, e := range s.Events {
			text += " " + e.Name
		}
		text += " " + s.GetStatus().GetMessage()
		for _, key := range []string{aliceKey, bobKey, url.PathEscape(aliceKey)} {
			if strings.Contains(text, key) {
				t.Errorf("a span holds a gateway key: %s", text)
			}
		}
	}
}
