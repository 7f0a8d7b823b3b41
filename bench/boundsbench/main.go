// Command boundsbench measures the bounds a focusgate binary keeps, from the
// outside, with a retriever that never answers and FOCUSGATE_RETRIEVER_TIMEOUT=2s:
//
//	-what memory    peak RSS with 8 concurrent 28 MB bodies of 1,000,000 content parts
//	-what page      time to answer a page of -size bytes (and a mode-off baseline)
//	-what replicas  time to answer identical requests sent to three replicas sharing -redis
//
// It is a manual measurement (see BENCHMARKS.md), never a test: timings depend
// on the machine.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

func listen() (net.Listener, string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	return ln, "http://" + ln.Addr().String()
}

func freeAddr() string {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	return ln.Addr().String()
}

func start(bin string, env ...string) (*exec.Cmd, string) {
	addr := freeAddr()
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), append(env, "FOCUSGATE_ADDR="+addr, "FOCUSGATE_LOG_LEVEL=warn")...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	url := "http://" + addr
	for range 200 {
		if r, err := http.Get(url + "/healthz"); err == nil {
			r.Body.Close()
			return cmd, url
		}
		time.Sleep(50 * time.Millisecond)
	}
	panic("gateway did not start")
}

func hwm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:"))
		}
	}
	return "?"
}

func manyParts(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"model":"gpt-4.1","messages":[{"role":"user","content":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"text","text":"ab"}`)
	}
	b.WriteString(`]}]}`)
	return b.Bytes()
}

func bigPage(size int) []byte {
	var b strings.Builder
	b.WriteString("RootWebArea 'Catalogue', focused\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "\t[a%d] link 'Product number %d with a long descriptive name'\n\t\tStaticText 'Price $%d.99'\n", i, i, i)
	}
	msg := "# Goal\nBuy the cheapest product\n\n## AXTree:\n" + b.String() + "\n## Focused element:\nNone\n"
	body, _ := json.Marshal(map[string]any{"model": "gpt-4.1", "messages": []map[string]any{{"role": "user", "content": msg}}})
	return body
}

func post(url string, body []byte) (time.Duration, string, int, bool) {
	start := time.Now()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		return time.Since(start), "error: " + err.Error(), 0, false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return time.Since(start), resp.Header.Get("X-Focusgate-Status"), resp.StatusCode, true
}

func main() {
	bin := flag.String("bin", "bin/focusgate", "focusgate binary (make build)")
	what := flag.String("what", "memory", "memory, page or replicas")
	size := flag.Int("size", 10<<20, "page size for -what page")
	redisURL := flag.String("redis", "", "redis URL for -what replicas")
	flag.Parse()

	// Upstream: records how many bytes it got and whether they were the original.
	var mu sync.Mutex
	var got [][]byte
	upLn, upURL := listen()
	go http.Serve(upLn, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, b)
		mu.Unlock()
		io.WriteString(w, `{}`)
	}))
	// Retriever that never answers.
	rtLn, rtURL := listen()
	var calls int
	go http.Serve(rtLn, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		calls++
		mu.Unlock()
		<-r.Context().Done()
	}))
	env := []string{"FOCUSGATE_UPSTREAM_URL=" + upURL + "/v1", "FOCUSGATE_RETRIEVER_URL=" + rtURL + "/v1",
		"FOCUSGATE_RETRIEVER_API_KEY=sk-x", "FOCUSGATE_RETRIEVER_TIMEOUT=2s"}

	switch *what {
	case "memory":
		cmd, url := start(*bin, env...)
		defer cmd.Process.Kill()
		body := manyParts(1_000_000)
		fmt.Printf("body %d bytes; idle RSS high-water %s\n", len(body), hwm(cmd.Process.Pid))
		var wg sync.WaitGroup
		start := time.Now()
		for i := range 8 {
			wg.Go(func() {
				d, st, code, _ := post(url, body)
				fmt.Printf("request %d: %d %q after %v\n", i, code, st, d.Round(time.Millisecond))
			})
		}
		wg.Wait()
		fmt.Printf("8 concurrent: done in %v, peak RSS %s\n", time.Since(start).Round(time.Millisecond), hwm(cmd.Process.Pid))
	case "page":
		cmd, url := start(*bin, env...)
		defer cmd.Process.Kill()
		body := bigPage(*size)
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("X-Focusgate-Mode", "off")
		t0 := time.Now()
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			fmt.Printf("baseline (mode off, transfer only): %v\n", time.Since(t0).Round(time.Millisecond))
		}
		mu.Lock()
		got = nil
		mu.Unlock()
		d, st, code, _ := post(url, body)
		mu.Lock()
		same := len(got) == 1 && bytes.Equal(got[0], body)
		mu.Unlock()
		fmt.Printf("%.1f MB page: %d %q after %v; original bytes forwarded: %v\n", float64(len(body))/(1<<20), code, st, d.Round(time.Millisecond), same)
		// The abandoned work must not keep a core busy after the answer.
		time.Sleep(3 * time.Second)
		out, _ := exec.Command("ps", "-o", "time=", "-p", fmt.Sprint(cmd.Process.Pid)).Output()
		fmt.Printf("gateway CPU time 3 s after the answer: %s", out)
	case "replicas":
		body, err := os.ReadFile("testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json")
		if err != nil {
			panic(err)
		}
		var urls []string
		model := "FOCUSGATE_RETRIEVER_MODEL=m-" + fmt.Sprint(time.Now().UnixNano())
		for range 3 {
			cmd, url := start(*bin, append(env, "FOCUSGATE_REDIS_URL="+*redisURL, model)...)
			defer cmd.Process.Kill()
			urls = append(urls, url)
		}
		// Warm up: load the BPE tables with another page, in every replica.
		for i, u := range urls {
			d, st, _, _ := post(u, bigPage(200<<10+i))
			fmt.Printf("warm-up %d: %q after %v\n", i, st, d.Round(time.Millisecond))
		}
		mu.Lock()
		got, calls = nil, 0
		mu.Unlock()
		var wg sync.WaitGroup
		for i, u := range urls {
			wg.Go(func() {
				d, st, code, _ := post(u, body)
				fmt.Printf("replica %d: %d %q after %v\n", i, code, st, d.Round(time.Millisecond))
			})
		}
		wg.Wait()
		mu.Lock()
		n := 0
		for _, g := range got {
			if bytes.Equal(g, body) {
				n++
			}
		}
		fmt.Printf("original bytes forwarded: %d of %d; retriever calls: %d\n", n, len(got), calls)
		mu.Unlock()
	}
}
