package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/focusgate/focusgate/bench/workload"
)

// report is the Markdown that loadbench prints.
type report struct {
	args                  []string
	opts                  options
	machine               string
	loadBefore, loadAfter string
	tree, missTree        workload.Tree
	treeTokensAfter       int
	loopSteps, loopBody   int
	loopTokensBefore      int
	loopTokensAfter       int
	noPage, prose         []byte           // the nopage and prose cases' first requests
	retrieverCalls        map[string]int64 // by case, warm-ups included
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
	p("Command: `%s`  \n", strings.Join(append([]string{"go run ./bench/loadbench"}, r.args...), " "))
	p("Machine: %s  \n", r.machine)
	p("Load average (1, 5, 15 min): %s before, %s after\n\n", r.loadBefore, r.loadAfter)
	run := r.opts.duration.String()
	if r.opts.requests > 0 {
		run = fmt.Sprintf("%d requests", r.opts.requests)
	}
	p("Each run: %s of warm-up, then %s, with every client sending its next request when its last is answered. ", r.opts.warmup, run)
	if r.opts.interleave {
		p("A case's targets run at once: each client sends a request to every target, in an order shuffled anew, before it sends the next to any. ")
	}
	p("Latency runs from sending a request to reading the last byte of its answer. ")
	if r.opts.upstreamMbit > 0 {
		p("The upstream answers no sooner than a path of %g Mbit/s, one for each request, would have carried the request body to it, "+
			"from the moment the request's headers arrive; every other hop is loopback. ", r.opts.upstreamMbit)
	}
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
				grouped(len(r.tree.Body)), grouped(r.tree.Lines), grouped(r.tree.Tokens), grouped(r.treeTokensAfter), r.retrieverCalls["tree"])
		case "toolloop":
			p("- toolloop: a %s-byte chat request of an agent that drives a browser through a snapshot tool, as Playwright MCP's "+
				"clients send it: %d steps, each a real page of `%s` (%s tokens in all), every earlier one included; "+
				"focusgate forwards them pruned to %s tokens, each from the selection it cached when that page was the newest "+
				"(retriever calls in the whole run: %d).\n",
				grouped(r.loopBody), r.loopSteps, r.opts.pagesDir, grouped(r.loopTokensBefore), grouped(r.loopTokensAfter), r.retrieverCalls["toolloop"])
		case "nopage":
			p("- nopage: %s-byte chat requests with no page, but markdown notes (`%s`) of list items, check boxes and links "+
				"that look like element ids; each differs from the others in its first words, so focusgate searches each anew.\n",
				grouped(len(r.noPage)), r.opts.notesFile)
		case "prose":
			p("- prose: %s-byte chat requests of prose, with no page and nothing that looks like one; each differs from the others in its first words.\n",
				grouped(len(r.prose)))
		case "miss":
			p("- miss: the tree case's request with %s lines and %s tokens of its page, which each request changes in its first line: "+
				"a page focusgate has not seen whole, so every request is a cache miss that asks the retriever (which answers at once; "+
				"calls in the whole run: %s), while the tokens of every other line were counted before.\n",
				grouped(r.missTree.Lines), grouped(r.missTree.Tokens), grouped(int(r.retrieverCalls["miss"])))
		}
	}

	if r.opts.rounds > 1 {
		each := "every case, client count and target in turn"
		if r.opts.interleave {
			each = "every case and client count in turn"
		}
		p("\n%d rounds, each running %s. Every figure is the median over the rounds "+
			"(added latency paired within a round), except peak RSS, the highest.\n", r.opts.rounds, each)
	}
	p("\n| case | clients | target | requests | req/s | p50 | p99 | added p50 | added p99 | proxy CPU/req | proxy peak RSS |\n")
	p("|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, row := range r.rows() {
		added50, added99, cpu, rss := "", "", "", ""
		if row.target != direct {
			if a, ok := r.added(row.body, row.clients, row.target, func(x result) time.Duration { return x.p50 }); ok {
				added50 = signed(median(a))
			}
			if a, ok := r.added(row.body, row.clients, row.target, func(x result) time.Duration { return x.p99 }); ok {
				added99 = signed(median(a))
			}
			cpu, rss = "n/a", "n/a"
			if c := medianOf(row.runs, func(x result) time.Duration { return x.cpu }); c > 0 {
				cpu = duration(c)
			}
			var peak int64
			for _, x := range row.runs {
				peak = max(peak, x.peakRSS)
			}
			if peak > 0 {
				rss = fmt.Sprintf("%.0f MiB", float64(peak)/(1<<20))
			}
		}
		reqs := medianOf(row.runs, func(x result) time.Duration { return time.Duration(x.requests) })
		rps := medianOf(row.runs, func(x result) time.Duration { return time.Duration(x.rps() + 0.5) })
		p("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", row.body, row.clients, row.target,
			grouped(int64(reqs)), grouped(int64(rps)),
			duration(medianOf(row.runs, func(x result) time.Duration { return x.p50 })),
			duration(medianOf(row.runs, func(x result) time.Duration { return x.p99 })), added50, added99, cpu, rss)
	}

	p("\nLatency added at p50, and focusgate's as a multiple of each baseline's: the median, then every round's.\n\n")
	p("| case | clients | default-proxy | reverse-proxy (tuned) | focusgate | focusgate / default | focusgate / tuned |\n")
	p("|---|--:|--:|--:|--:|--:|--:|\n")
	p50 := func(x result) time.Duration { return x.p50 }
	for _, name := range r.opts.cases {
		for _, clients := range r.opts.concurrency {
			std, ok1 := r.added(name, clients, defaultProxy, p50)
			bare, ok2 := r.added(name, clients, reverseProxy, p50)
			fg, ok3 := r.added(name, clients, gateway, p50)
			if !ok2 || !ok3 {
				continue
			}
			stdAdded := "n/a" // the stream case does not run the default proxy
			if ok1 {
				stdAdded = signed(median(std))
			}
			p("| %s | %d | %s | %s | %s | %s | %s |\n", name, clients, stdAdded, signed(median(bare)),
				signed(median(fg)), ratios(fg, std), ratios(fg, bare))
		}
	}
	return bw.Flush()
}

// row is every round's result of one case, client count and target.
type row struct {
	body    string
	clients int
	target  string
	runs    []result
}

// rows groups the results by case, client count and target, in the order
// they first ran.
func (r report) rows() []row {
	var rows []row
	for _, res := range r.results {
		i := slices.IndexFunc(rows, func(w row) bool {
			return w.body == res.body && w.clients == res.clients && w.target == res.target
		})
		if i < 0 {
			rows = append(rows, row{body: res.body, clients: res.clients, target: res.target})
			i = len(rows) - 1
		}
		rows[i].runs = append(rows[i].runs, res)
	}
	return rows
}

// added returns, for each round that measured both, what the target's
// statistic exceeds direct's by in the same round.
func (r report) added(body string, clients int, tg string, stat func(result) time.Duration) ([]time.Duration, bool) {
	var out []time.Duration
	for _, res := range r.results {
		if res.body != body || res.clients != clients || res.target != tg {
			continue
		}
		if base, ok := r.find(body, clients, direct, res.round); ok {
			out = append(out, stat(res)-stat(base))
		}
	}
	return out, len(out) > 0
}

func (r report) find(body string, clients int, target string, round int) (result, bool) {
	for _, res := range r.results {
		if res.body == body && res.clients == clients && res.target == target && res.round == round {
			return res, true
		}
	}
	return result{}, false
}

// ratios formats the median of num[i]/den[i] and, with several rounds,
// every round's ratio.
func ratios(num, den []time.Duration) string {
	var rs []float64
	for i := range min(len(num), len(den)) {
		if den[i] > 0 {
			rs = append(rs, float64(num[i])/float64(den[i]))
		}
	}
	if len(rs) == 0 {
		return "n/a"
	}
	each := make([]string, len(rs))
	for i, x := range rs {
		each[i] = fmt.Sprintf("%.2f", x)
	}
	sorted := slices.Sorted(slices.Values(rs))
	m := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		m = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	if len(rs) == 1 {
		return fmt.Sprintf("%.2fx", m)
	}
	return fmt.Sprintf("%.2fx (%s)", m, strings.Join(each, " / "))
}

// median returns the median of ds, the mean of the middle two when their
// number is even.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

func medianOf(rs []result, stat func(result) time.Duration) time.Duration {
	ds := make([]time.Duration, len(rs))
	for i, x := range rs {
		ds[i] = stat(x)
	}
	return median(ds)
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
