package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/bench/workload"
)

// fakeServer is an HTTP server on a loopback port of this process.
type fakeServer struct {
	URL string
	srv *http.Server
}

func serveFake(h http.Handler) (*fakeServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ends with ErrServerClosed on Close
	return &fakeServer{URL: "http://" + ln.Addr().String(), srv: srv}, nil
}

func (f *fakeServer) Close() error { return f.srv.Close() }

var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// upstream plays the action model's API. It reads the whole request, as a
// real API does before it answers, and replies at once with
// workload.Completion, or with streamEvents when the request asks for a
// stream.
//
// Loopback carries a request body as fast as the processes copy it, which no
// path from a gateway to a provider does. Given a rate, the upstream answers
// no sooner than a path of that rate, one for each request, would have
// carried the body to it from the moment its headers arrived; what a proxy
// saves by forwarding fewer bytes then shows as it would to a user.
type upstream struct {
	bitsPerSecond float64 // zero: loopback's own pace
}

func (u upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	buf := bodyBuffers.Get().(*bytes.Buffer)
	defer bodyBuffers.Put(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if u.bitsPerSecond > 0 {
		waitUntil(start.Add(carried(buf.Len(), u.bitsPerSecond)))
	}
	if !gjson.GetBytes(buf.Bytes(), "stream").Bool() {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, workload.Completion)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	for _, ev := range streamEvents {
		if _, err := io.WriteString(w, ev); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// carried is how long a path of the given rate takes to carry n bytes.
func carried(n int, bitsPerSecond float64) time.Duration {
	return time.Duration(float64(n) * 8 / bitsPerSecond * float64(time.Second))
}

// waitUntil returns at t, give or take a few microseconds, without holding a
// core for long. A sleeping goroutine in a process as idle as the upstream's
// at one client wakes up to a millisecond late (the runtime's poller waits in
// whole milliseconds), which would blur a path's pace over a body of a few
// hundred kilobytes; so the thread sleeps until shortly before t (threadSleep)
// and yields for the rest.
func waitUntil(t time.Time) {
	if d := time.Until(t) - yieldFor; d > 0 {
		threadSleep(d)
	}
	for time.Now().Before(t) {
		runtime.Gosched()
	}
}

// yieldFor is how long before its time waitUntil stops sleeping: more than
// threadSleep is late, about 80 µs here.
const yieldFor = 150 * time.Microsecond

// streamEvents is a short chat-completion stream: a role, eight content
// deltas, a finish reason and the terminator, each flushed on its own.
var streamEvents = func() []string {
	const head = `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,`
	events := []string{head + `"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"}
	for _, word := range strings.Fields("Wrap errors where they cross a boundary and compare them elsewhere.") {
		content, _ := json.Marshal(word + " ")
		events = append(events, head+`"delta":{"content":`+string(content)+`},"finish_reason":null}]}`+"\n\n")
	}
	return append(events, head+`"delta":{},"finish_reason":"stop"}]}`+"\n\n", "data: [DONE]\n\n")
}()

func streamSize() int64 {
	var n int
	for _, ev := range streamEvents {
		n += len(ev)
	}
	return int64(n)
}

// retriever plays the retriever model: whatever it is asked, it answers
// with the same line ranges. It counts its calls, which shows that the cache
// spares every request after the first.
type retriever struct {
	answer []byte
	calls  atomic.Int64
}

func newRetriever(ranges []focusgate.Range) (*retriever, error) {
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = fmt.Sprintf("(%d,%d)", r.From, r.To)
	}
	answer, err := json.Marshal(map[string]any{
		"id": "chatcmpl-retriever", "object": "chat.completion", "created": 1700000000, "model": "gpt-4.1-mini",
		"choices": []map[string]any{{"index": 0, "finish_reason": "stop", "message": map[string]string{
			"role": "assistant", "content": "<think>benchmark</think><answer>[" + strings.Join(parts, ", ") + "]</answer>",
		}}},
		"usage": map[string]int{"prompt_tokens": 52000, "completion_tokens": 900, "total_tokens": 52900},
	})
	if err != nil {
		return nil, err
	}
	return &retriever{answer: answer}, nil
}

func (rt *retriever) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt.calls.Add(1)
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(rt.answer)
}
