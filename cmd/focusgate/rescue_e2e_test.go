//go:build e2e

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// windowModel stands in front of the fake action model as a provider with a
// small context window: a body over the window is refused the way OpenAI
// refuses it, anything else reaches the model. The window is set, once, when
// the first request holding three page snapshots arrives, one byte over the
// request before it: that request is the first the conversation outgrows,
// whatever the exact sizes of the pages.
type windowModel struct {
	*httptest.Server

	mu      sync.Mutex
	sizes   []int // every body that arrived, in order
	limit   int   // the window in bytes; 0 until set
	refused int
}

func newWindowModel(t *testing.T, model string) *windowModel {
	t.Helper()
	target, err := url.Parse(model)
	if err != nil {
		t.Fatal(err)
	}
	target.Path = ""
	next := httputil.NewSingleHostReverseProxy(target)
	m := &windowModel{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		if m.limit == 0 && len(m.sizes) > 0 && bytes.Count(body, []byte("### Snapshot\\n```yaml")) >= 3 {
			m.limit = m.sizes[len(m.sizes)-1] + 1
		}
		m.sizes = append(m.sizes, len(body))
		limit := m.limit
		over := limit > 0 && len(body) > limit
		if over {
			m.refused++
		}
		m.mu.Unlock()
		if over {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, limit/4, len(body)/4)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	}))
	t.Cleanup(m.Close)
	return m
}

// flakyRetriever fails its first failures calls, as a retriever does now and
// then: the page those calls were about goes out whole, and once a newer page
// has come, every later request of the conversation carries it whole, with
// no selection stored for it.
func flakyRetriever(t *testing.T, next string, failures int32) *httptest.Server {
	t.Helper()
	target, _ := url.Parse(next)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= failures {
			io.Copy(io.Discard, r.Body)
			http.Error(w, `{"error":{"message":"overloaded","type":"server_error"}}`, http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The real Playwright MCP tool loop, through the gateway, against a model
// whose window its conversation outgrows: the retriever fails while the first
// snapshot is the newest page (the snapshot, then the click after it), so
// that page rides whole in every later request, and the request of the third
// snapshot no longer fits. focusgate rescues it (the first page is
// asked of the retriever again, every page goes out pruned), the agent never
// sees the refusal and finishes its task, and the later requests fit without
// another rescue.
func TestRealAgentOutgrowingTheWindowFinishesItsTask(t *testing.T) {
	node, _, _ := e2eRequirements(t)
	pages := httptest.NewServer(http.FileServer(http.Dir("../../e2e/pages")))
	t.Cleanup(pages.Close)
	model := startFakeModel(t, node, t.TempDir())
	window := newWindowModel(t, model)
	retriever := newFakeModel(t, neededElement)
	gw := startGateway(t, map[string]string{
		"FOCUSGATE_UPSTREAM_URL":  window.URL + "/v1",
		"FOCUSGATE_RETRIEVER_URL": flakyRetriever(t, retriever.URL, 2).URL + "/v1",
		"FOCUSGATE_MIN_TOKENS":    "100",
	})
	front := newClientRecorder(t, gw.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "agent.mjs", "playwright-mcp/chat", front.URL+"/v1", pages.URL)
	cmd.Dir = "../../e2e"
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	window.mu.Lock()
	sizes, refused, limit := append([]int(nil), window.sizes...), window.refused, window.limit
	window.mu.Unlock()
	t.Logf("bodies reaching the model: %v (window %d bytes)", sizes, limit)
	if err != nil {
		t.Fatalf("the agent did not finish its task: %v\nstdout: %s\nstderr: %s", err, stdout.String(), tail(stderr.String(), 4000))
	}
	_, answers := front.sent()
	rescued := 0
	for k, h := range answers {
		st := h.Get("X-Focusgate-Status")
		if strings.Contains(st, "rescue=") {
			rescued++
			if !strings.Contains(st, "rescue=rescued") {
				t.Errorf("request %d: X-Focusgate-Status %q, want rescued", k, st)
			}
		}
	}
	if refused != 1 || rescued != 1 {
		t.Errorf("%d refusals and %d rescues, want the third snapshot's request refused once and rescued", refused, rescued)
	}
	if !strings.Contains(gw.logs.String(), "rescue=rescued") {
		t.Error("the gateway's log does not say a request was rescued")
	}
}
