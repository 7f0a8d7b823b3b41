// Package workload is what focusgate's benchmarks share: the requests (a
// small chat request with nothing to prune, and a real GenericAgent request
// whose page observation is cut to a token budget), the upstream's answer,
// the retriever's selection and the bare reverse proxy focusgate is compared
// with. The Go benchmarks of package proxy and the load benchmark use the same
// pieces, so that their numbers describe the same work.
package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/prune"
)

// Completion is the upstream's answer to a chat-completion request: a small,
// fixed body, so that what is measured is the gateway, not the model.
const Completion = `{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4.1-2025-04-14",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"<think>The search box is visible.</think>\n<action>\nfill('a203', 'MacBook Pro 15')\n</action>"},` +
	`"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1200,"completion_tokens":24,"total_tokens":1224}}`

// chatPrompt is ordinary prompt text: prose and a short list, nothing that
// parses as a page observation.
const chatPrompt = `I maintain a small Go service that forwards requests to a third-party API and I want to make its error handling
more predictable. Today every handler logs the error, writes a 500 and returns, which means clients cannot tell a
timeout from a bad request, and our dashboards show a single undifferentiated error rate.

What I would like to end up with:
- errors that say which dependency failed and whether retrying can help;
- one place that maps them to status codes and to the JSON shape our clients already parse;
- logs with the request id and the dependency, but never the request body, which can contain personal data;
- metrics split by dependency and by reason, with a bounded set of label values.

Please propose a design in a few paragraphs, then show the error type, the mapping function and one handler that
uses them. Keep it to the standard library, and explain where you would wrap errors and where you would only
compare them. Point out anything in this plan that you think will not hold up in production.`

// Chat returns a chat-completion request of about 1.2 KB with no page
// observation in it: what most traffic through the gateway looks like, and
// the body of the passthrough benchmarks. With stream set it asks for
// server-sent events.
func Chat(stream bool) []byte {
	return chat(stream, "You are a senior Go engineer. Answer precisely and show code where it helps.", chatPrompt)
}

// NotesFile is, relative to the repository's root, the text of the NoPage
// request: 15 KB of markdown planning notes.
const NotesFile = "detect/testdata/negative/sprint_notes.md"

// NoPage returns chat-completion requests of about 16 KB that hold no page
// but read like one at first sight: the user asks about notes, the text of
// NotesFile, whose hundreds of "- " list items follow the line grammar of
// Playwright's snapshots and whose "[#1234]" links and "[x]" boxes look like
// element ids. It is what detection must reject at memory speed. The nth
// request says its number in its first words, so that each is new to
// focusgate's memory of the texts it has searched, as the newest message of
// a chat is.
func NoPage(notes string) func(n uint64) []byte {
	return Renumbered(chat(false, "You are a helpful project assistant.", firstWords+"Summarise what is still open, by owner.\n\n"+notes))
}

// firstWords open the user's message of NoPage's and Prose's requests.
const firstWords = "Request 0. "

// Renumbered returns requests like one of NoPage's or Prose's (or that
// request with its model moved by ModelLast): the nth says "Request n." in
// its first words.
func Renumbered(body []byte) func(n uint64) []byte {
	at := bytes.Index(body, []byte(firstWords)) + len("Request ")
	if at < len("Request ") {
		panic("workload: the request does not say " + firstWords)
	}
	head, tail := body[:at], body[at+1:]
	return func(n uint64) []byte {
		out := make([]byte, 0, len(body)+20)
		out = strconv.AppendUint(append(out, head...), n, 10)
		return append(out, tail...)
	}
}

// ModelLast returns body, a JSON object, with its "model" member moved to
// its end, after the conversation, where the Python SDKs of OpenAI and
// Anthropic (AgentLab, browser-use) and Stagehand write it. The other
// members keep their bytes and order.
func ModelLast(body []byte) ([]byte, error) {
	var start, end int
	var member []byte
	gjson.ParseBytes(body).ForEach(func(k, v gjson.Result) bool {
		if k.String() != "model" {
			return true
		}
		start, end = k.Index, v.Index+len(v.Raw)
		member = body[start:end]
		return false
	})
	closing := bytes.LastIndexByte(body, '}')
	if member == nil || closing < end {
		return nil, errors.New("workload: the body is not an object with a \"model\" member")
	}
	rest := bytes.TrimLeft(body[end:closing], " \t\r\n")
	if len(rest) == 0 || rest[0] != ',' {
		return nil, errors.New("workload: the \"model\" member is already last")
	}
	out := make([]byte, 0, len(body)+1)
	out = append(out, body[:start]...)
	out = append(out, bytes.TrimLeft(rest[1:], " \t\r\n")...)
	out = append(out, ',')
	out = append(out, member...)
	return append(out, body[closing:]...), nil
}

// proseSentences are what Prose writes its paragraphs of: ordinary
// technical prose, with no list, table or bracket a page grammar could read.
var proseSentences = []string{
	"The service forwards every request to a third-party API and writes back whatever it answers.",
	"When the answer is slow, the handler waits for it, and the client waits with the handler.",
	"We would like each failure to say which dependency failed and whether trying again can help.",
	"Today every error becomes a status of 500, so nobody can tell a timeout from a request that was wrong.",
	"The dashboards show one error rate, which rises and falls without telling anyone why.",
	"A better design keeps the mapping from errors to status codes in one place, next to the shapes clients parse.",
	"Logs should carry the request's identifier and the dependency's name, but never the body of the request.",
	"Bodies can hold personal data, and a log line is read by more people than the request ever was.",
	"Metrics split by dependency and by reason make the rate readable again, as long as the labels stay few.",
	"Where an error crosses a boundary it is wrapped with what the caller needs to know, and elsewhere only compared.",
	"Retries belong to the client that knows whether the request was safe to send twice.",
	"A deadline set at the edge travels with the request, so that no call below it outlives the caller's patience.",
	"None of this needs a framework: the standard library's errors, context and log packages are enough.",
	"What will not hold up in production is usually what nobody measured before it shipped.",
}

// proseText is about size bytes of prose in paragraphs of five sentences.
func proseText(size int) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			if i%5 == 0 {
				b.WriteString("\n\n")
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteString(proseSentences[i%len(proseSentences)])
	}
	return b.String()
}

// Prose returns chat-completion requests of about 16 KB of prose, with no
// page and nothing that looks like one: the other ordinary chat body beside
// NoPage's list items. As with NoPage, the nth request says its number in
// its first words, so that each is new to focusgate's memory of the texts it
// has searched.
func Prose() func(n uint64) []byte {
	return NoPage(proseText(15 << 10))
}

func chat(stream bool, system, user string) []byte {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	b, err := json.Marshal(struct {
		Model       string    `json:"model"`
		Messages    []message `json:"messages"`
		Temperature float64   `json:"temperature"`
		Stream      bool      `json:"stream,omitempty"`
	}{
		Model:    "gpt-4.1-2025-04-14",
		Messages: []message{{Role: "system", Content: system}, {Role: "user", Content: user}},
		Stream:   stream,
	})
	if err != nil {
		panic(err) // a fixed value of plain types always marshals
	}
	return b
}

// ToolLoop returns the chat-completion request of an agent that drives a
// browser through tools, as the clients of Playwright MCP and
// chrome-devtools-mcp send it: a system prompt and the task, then a tool call
// and its result for each step, every earlier one included. A step is the
// tool's name and what it returned.
func ToolLoop(model string, steps ...[2]string) []byte {
	msgs := []map[string]any{
		{"role": "system", "content": "You drive a web browser with tools."},
		{"role": "user", "content": "Order a standard laptop with the default configuration"},
	}
	for i, s := range steps {
		id := string(rune('a' + i))
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{
				"id": id, "type": "function", "function": map[string]any{"name": s[0], "arguments": "{}"},
			}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": s[1]},
		)
	}
	b, err := json.Marshal(map[string]any{"model": model, "messages": msgs})
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return b
}

// PagesDir is, relative to the repository's root, the directory of the real
// accessibility trees that ToolLoopSteps reads.
const PagesDir = "testdata/axtrees"

// ToolLoopSteps returns the steps of a tool loop that has browsed every page
// in dir (see PagesDir), in the order of their file names, each read by a
// snapshot tool.
func ToolLoopSteps(dir string) ([][2]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no pages (*.txt) in %s", dir)
	}
	steps := make([][2]string, len(files))
	for i, f := range files {
		page, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		steps[i] = [2]string{"snapshot", string(page)}
	}
	return steps, nil
}

// Tree is a GenericAgent request whose observation was cut to a token budget.
type Tree struct {
	Body []byte
	// Lines is the number of tree lines focusgate numbers for the retriever;
	// selections index them.
	Lines int
	// Tokens is the observation's size as focusgate counts it for the
	// request's model.
	Tokens int
	// page is where the observation starts in Body.
	page int
}

// Steps returns the request as an agent sends it at successive steps while
// the page changes a little: the nth names n in the page's first line, so
// that each is a page focusgate has not seen whole (no selection is stored
// for it and detection has not searched its string) though it has counted
// the tokens of every other line before. It is the body of a cache miss.
func (t Tree) Steps() func(n uint64) []byte {
	q := t.page + bytes.IndexByte(t.Body[t.page:], '\'') + 1
	head, tail := t.Body[:q], t.Body[q:]
	return func(n uint64) []byte {
		out := make([]byte, 0, len(t.Body)+24)
		out = strconv.AppendUint(append(out, head...), n, 10)
		return append(append(out, ' '), tail...)
	}
}

// NewTree returns the chat request of requestFile, a real GenericAgent
// request with one observation, with that observation replaced by the longest
// prefix of treeFile's lines that has at most maxTokens tokens. The rest of
// the request (instructions, goal, history, examples) stays as it is.
func NewTree(requestFile, treeFile string, maxTokens int) (Tree, error) {
	req, err := os.ReadFile(requestFile)
	if err != nil {
		return Tree{}, err
	}
	page, err := os.ReadFile(treeFile)
	if err != nil {
		return Tree{}, err
	}
	obs, err := onlyObservation(req)
	if err != nil {
		return Tree{}, fmt.Errorf("%s: %w", requestFile, err)
	}

	model := detect.Model(req)
	counter := prune.NewCounter(64 << 20)
	lines := strings.Split(strings.TrimRight(string(page), "\n"), "\n")
	prefix := func(n int) string { return strings.Join(lines[:n], "\n") }
	// Token counts grow with the prefix: find the longest one in budget.
	lo, hi := 0, len(lines)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if counter.Count(model, prefix(mid)) <= maxTokens {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo == 0 {
		return Tree{}, fmt.Errorf("%s: the first line alone has more than %d tokens", treeFile, maxTokens)
	}
	tree := prefix(lo)

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(tree); err != nil {
		return Tree{}, err
	}
	escaped := bytes.TrimSuffix(bytes.TrimSpace(buf.Bytes()), []byte(`"`))[1:]
	body := make([]byte, 0, len(req)-(obs.RawEnd-obs.RawStart)+len(escaped))
	body = append(append(append(body, req[:obs.RawStart]...), escaped...), req[obs.RawEnd:]...)

	// The benchmark is only meaningful if focusgate sees exactly this tree.
	got, err := onlyObservation(body)
	if err != nil {
		return Tree{}, fmt.Errorf("built request: %w", err)
	}
	if got.Text != tree {
		return Tree{}, errors.New("built request: the detected observation is not the tree that was put in")
	}
	return Tree{Body: body, Lines: len(got.Lines), Tokens: counter.Count(model, tree), page: obs.RawStart}, nil
}

func onlyObservation(body []byte) (detect.Observation, error) {
	obs, err := detect.Find(body, focusgate.APIChat, detect.Options{})
	if err != nil {
		return detect.Observation{}, err
	}
	if len(obs) != 1 {
		return detect.Observation{}, fmt.Errorf("want one observation, found %d", len(obs))
	}
	return obs[0], nil
}

// Keep is the selection the benchmarks' retriever answers for a tree of n
// lines: the first 3 lines of every 10, about 30% of the page, spread over
// the whole tree so that pruning leaves many runs of removed lines.
func Keep(n int) []focusgate.Range {
	var ranges []focusgate.Range
	for from := 1; from <= n; from += 10 {
		ranges = append(ranges, focusgate.Range{From: from, To: min(from+2, n)})
	}
	return ranges
}

// BareProxy is the baseline focusgate is measured against: an
// httputil.ReverseProxy to target set up as focusgate's (newReverseProxy in
// proxy/forward.go: it flushes streams event by event and an answer of known
// length once, and copies answers through reused buffers), over a transport
// with the settings of focusgate's upstream transport (newTransport in
// proxy/server.go), and nothing else but one thing focusgate also does: it
// reads each request body whole before forwarding it, as focusgate reads it,
// into a reused buffer of the announced length. Forwarding the body as a
// stream instead cut streamed answers short now and then on reused client
// connections (net/http's background read on the client connection fails
// with a timeout and cancels the request mid-stream); a baseline that drops
// answers cannot be measured.
func BareProxy(target *url.URL) http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          512,
			MaxIdleConnsPerHost:   256,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			ResponseHeaderTimeout: 10 * time.Minute,
			DisableCompression:    true,
		},
		FlushInterval: 0,
		BufferPool:    copyBuffers{},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = body
		rp.ServeHTTP(w, r)
	})
}

// copyBuffers lends BareProxy's ReverseProxy the buffers it copies answers
// through, as focusgate's does.
type copyBuffers struct{}

var copyBufferPool = sync.Pool{New: func() any { return new([32 << 10]byte) }}

func (copyBuffers) Get() []byte { return copyBufferPool.Get().(*[32 << 10]byte)[:] }

func (copyBuffers) Put(b []byte) { copyBufferPool.Put((*[32 << 10]byte)(b)) }

// bodies are BareProxy's reused body buffers.
var bodies sync.Pool

// readBody reads r's body whole: into a reused buffer of exactly the
// announced length, or, without one, as io.ReadAll does.
func readBody(r *http.Request) (io.ReadCloser, error) {
	n := r.ContentLength
	if n <= 0 {
		b, err := io.ReadAll(r.Body)
		return io.NopCloser(bytes.NewReader(b)), err
	}
	buf, _ := bodies.Get().(*[]byte)
	if buf == nil || int64(cap(*buf)) < n {
		buf = new([]byte)
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	if _, err := io.ReadFull(r.Body, b); err != nil {
		bodies.Put(buf)
		return nil, err
	}
	pb := &pooledBody{buf: buf}
	pb.Reset(b)
	return pb, nil
}

// pooledBody gives its buffer back once the transport has closed it, which
// it does when it is done writing the body.
type pooledBody struct {
	bytes.Reader
	buf  *[]byte
	once sync.Once
}

func (b *pooledBody) Close() error {
	b.once.Do(func() { bodies.Put(b.buf) })
	return nil
}
