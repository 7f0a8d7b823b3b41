package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/focusgate/focusgate/internal/loadbench/workload"
)

// report is the Markdown that loadbench prints.
type report struct {
	args                  []string
	opts                  options
	machine               string
	loadBefore, loadAfter string
	tree                  workload.Tree
	treeTokensAfter       int
	retrieverCalls        int64
	results               []result
}

// describeMachine names the CPU, its count and the Go version.
func describeMachine() string {
	model := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		s := bufio.NewScanner(f)
		for s.Scan() {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%d CPUs (%s), %s %s/%s, GOMAXPROCS %d",
		runtime.NumCPU(), model, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
}

// loadAverage returns the 1, 5 and 15 minute load averages, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if err != nil || len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func (r report) write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }

	p("## Load benchmark\n\n")
	p("Command: `%s`  \n", strings.Join(append([]string{"go run ./internal/loadbench"}, r.args...), " "))
	p("Machine: %s  \n", r.machine)
	p("Load average (1, 5, 15 min): %s before, %s after\n\n", r.loadBefore, r.loadAfter)
	run := r.opts.duration.String()
	if r.opts.requests > 0 {
		run = fmt.Sprintf("%d requests", r.opts.requests)
	}
	p("Each run: %s of warm-up, then %s, with every client sending its next request when its last is answered. ", r.opts.warmup, run)
	p("Latency runs from sending a request to reading the last byte of its answer. ")
	p("Added latency is the proxy's percentile minus direct's. ")
	p("CPU per request and peak RSS are the proxy process's, from /proc, during the run.\n\n")
	for _, name := range r.opts.cases {
		switch name {
		case "passthrough":
			p("- passthrough: a %s-byte chat request with nothing to prune; the upstream answers %d bytes of JSON.\n",
				grouped(len(workload.Chat(false))), len(workload.Completion))
		case "stream":
			p("- stream: the same request with `\"stream\": true`; the upstream answers %d server-sent events (%s bytes), flushing each.\n",
				len(streamEvents), grouped(streamSize()))
		case "tree":
			p("- tree: a %s-byte GenericAgent request whose observation has %s lines and %s tokens; "+
				"focusgate forwards it pruned to %s tokens from its cached selection (retriever calls in the whole run: %d).\n",
				grouped(len(r.tree.Body)), grouped(r.tree.Lines), grouped(r.tree.Tokens), grouped(r.treeTokensAfter), r.retrieverCalls)
		}
	}

	p("\n| case | clients | target | requests | req/s | p50 | p99 | added p50 | added p99 | proxy CPU/req | proxy peak RSS |\n")
	p("|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, res := range r.results {
		added50, added99, cpu, rss := "", "", "", ""
		if res.target != direct {
			if base, ok := r.find(res.body, res.clients, direct); ok {
				added50, added99 = signed(res.p50-base.p50), signed(res.p99-base.p99)
			}
			cpu, rss = "n/a", "n/a"
			if res.cpu > 0 {
				cpu = duration(res.cpu)
			}
			if res.peakRSS > 0 {
				rss = fmt.Sprintf("%.0f MiB", float64(res.peakRSS)/(1<<20))
			}
		}
		p("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", res.body, res.clients, res.target,
			grouped(res.requests), grouped(int64(res.rps()+0.5)), duration(res.p50), duration(res.p99), added50, added99, cpu, rss)
	}

	p("\nLatency added at p50, focusgate against the bare reverse proxy:\n\n")
	p("| case | clients | reverse-proxy | focusgate | ratio |\n|---|--:|--:|--:|--:|\n")
	for _, name := range r.opts.cases {
		for _, clients := range r.opts.concurrency {
			d, ok1 := r.find(name, clients, direct)
			b, ok2 := r.find(name, clients, reverseProxy)
			f, ok3 := r.find(name, clients, focusgate)
			if !ok1 || !ok2 || !ok3 {
				continue
			}
			bareAdded, fgAdded := b.p50-d.p50, f.p50-d.p50
			ratio := "n/a"
			if bareAdded > 0 {
				ratio = fmt.Sprintf("%.2fx", float64(fgAdded)/float64(bareAdded))
			}
			p("| %s | %d | %s | %s | %s |\n", name, clients, signed(bareAdded), signed(fgAdded), ratio)
		}
	}
	return bw.Flush()
}

func (r report) find(body string, clients int, target string) (result, bool) {
	for _, res := range r.results {
		if res.body == body && res.clients == clients && res.target == target {
			return res, true
		}
	}
	return result{}, false
}

// duration formats a latency with three significant digits or so.
func duration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
}

func signed(d time.Duration) string {
	if d < 0 {
		return "−" + duration(-d)
	}
	return "+" + duration(d)
}

// grouped formats a count with thousands separators.
func grouped[N int | int64](n N) string {
	s := strconv.FormatInt(int64(n), 10)
	var b strings.Builder
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
