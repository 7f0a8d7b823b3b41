// Command loadbench measures what focusgate adds to a request under load. It
// sends the same requests straight to a fake upstream, through a bare
// httputil.ReverseProxy (the standard library's defaults, and one tuned like
// focusgate) and through focusgate, all on loopback, at each level
// of concurrency, and prints a Markdown report: requests per second, p50 and
// p99 latency, the latency each proxy adds, and each proxy's CPU time per
// request and peak memory.
//
// The fakes (upstream and retriever) and the load generator run in this
// process; focusgate (built from cmd/focusgate, run with its defaults) and
// the two bare proxies (./defaultproxy, ./bareproxy) run as child processes, so that their CPU and
// memory are read from /proc apart from the load's. Run it from the module
// root:
//
//	go run ./bench/loadbench [-duration 3s | -requests N] [-concurrency 1,64] [-rounds 1] [-upstream-mbit 0]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/focusgate/focusgate/bench/workload"
	"github.com/focusgate/focusgate/proxy"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "loadbench: %v\n", err)
		os.Exit(1)
	}
}

// caseNames are the request kinds, in the order they run.
var caseNames = []string{"passthrough", "stream", "tree", "toolloop", "nopage", "prose", "miss"}

type options struct {
	duration, warmup      time.Duration
	requests, rounds      int
	concurrency           []int
	cases                 []string
	treeTokens            int
	missTokens            int
	requestFile, treeFile string
	notesFile             string
	pagesDir              string
	upstreamMbit          float64
	modelLast             bool
	interleave            bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	opts := options{concurrency: []int{1, 64}, cases: caseNames}
	fs := flag.NewFlagSet("loadbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&opts.duration, "duration", 3*time.Second, "how long each run is measured, after its warm-up")
	fs.IntVar(&opts.requests, "requests", 0, "measure each run over this many requests to each target instead of -duration")
	fs.IntVar(&opts.rounds, "rounds", 1, "runs of every case, client count and target, interleaved; the report shows medians")
	fs.DurationVar(&opts.warmup, "warmup", 500*time.Millisecond, "unmeasured load before each run")
	fs.Func("concurrency", "comma-separated numbers of concurrent clients (default 1,64)", func(s string) error {
		opts.concurrency = nil
		for f := range strings.SplitSeq(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return fmt.Errorf("%q is not a positive number", f)
			}
			opts.concurrency = append(opts.concurrency, n)
		}
		return nil
	})
	fs.Func("cases", "comma-separated cases to run: "+strings.Join(caseNames, ", ")+" (default all)", func(s string) error {
		opts.cases = nil
		for f := range strings.SplitSeq(s, ",") {
			if f = strings.TrimSpace(f); !slices.Contains(caseNames, f) {
				return fmt.Errorf("unknown case %q", f)
			}
			opts.cases = append(opts.cases, f)
		}
		return nil
	})
	fs.IntVar(&opts.treeTokens, "tree-tokens", 80000, "most tokens of the tree case's observation")
	fs.IntVar(&opts.missTokens, "miss-tokens", 60000, "most tokens of the miss case's observation")
	fs.StringVar(&opts.treeFile, "tree", "testdata/axtrees/bgym-pr301_web_amazon_macbook.txt",
		"page whose first lines are the tree case's observation")
	fs.StringVar(&opts.requestFile, "request", "testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json",
		"GenericAgent request that carries the observation")
	fs.StringVar(&opts.notesFile, "notes", workload.NotesFile, "text of the nopage case's requests")
	fs.StringVar(&opts.pagesDir, "pages", workload.PagesDir, "directory of the pages (*.txt) the toolloop case's agent has browsed, one a step")
	fs.Float64Var(&opts.upstreamMbit, "upstream-mbit", 0,
		"megabits per second at which each request body reaches the upstream, as over a path to a provider (0: loopback's own pace)")
	fs.BoolVar(&opts.modelLast, "model-last", false,
		"name the model after the conversation in the tree, nopage and prose cases' requests, as the Python SDKs of OpenAI and Anthropic write it")
	fs.BoolVar(&opts.interleave, "interleave", false,
		"measure a case's targets at once, each client sending a request to every target in a shuffled order before the next, instead of one target after another")
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	if opts.upstreamMbit < 0 {
		return opts, fmt.Errorf("-upstream-mbit %v: want 0 or more", opts.upstreamMbit)
	}
	if opts.rounds < 1 {
		return opts, fmt.Errorf("-rounds %d: want at least 1", opts.rounds)
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	return opts, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	rep := report{args: args, opts: opts, machine: describeMachine(), loadBefore: loadAverage()}

	tree, err := workload.NewTree(opts.requestFile, opts.treeFile, opts.treeTokens)
	if err != nil {
		return err
	}
	rep.tree = tree
	missTree, err := workload.NewTree(opts.requestFile, opts.treeFile, opts.missTokens)
	if err != nil {
		return err
	}
	rep.missTree = missTree
	steps, err := workload.ToolLoopSteps(opts.pagesDir)
	if err != nil {
		return err
	}
	rep.loopSteps = len(steps)
	// One answer serves every page: its ranges are clipped to each page's
	// lines, so it is made for the longest.
	longest := max(tree.Lines, missTree.Lines)
	for _, s := range steps {
		longest = max(longest, strings.Count(s[1], "\n")+1)
	}
	rt, err := newRetriever(workload.Keep(longest))
	if err != nil {
		return err
	}
	up, err := serveFake(upstream{bitsPerSecond: opts.upstreamMbit * 1e6})
	if err != nil {
		return err
	}
	defer up.Close()
	rts, err := serveFake(rt)
	if err != nil {
		return err
	}
	defer rts.Close()

	dir, err := os.MkdirTemp("", "loadbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	log.Info("building focusgate and the baseline proxies")
	if err := build(ctx, dir); err != nil {
		return err
	}
	bare, err := start(ctx, filepath.Join(dir, "bareproxy"), []string{"-upstream", up.URL}, os.Environ(), dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, bare.stop()) }()
	std, err := start(ctx, filepath.Join(dir, "defaultproxy"), []string{"-upstream", up.URL}, os.Environ(), dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, std.stop()) }()
	fg, err := start(ctx, filepath.Join(dir, "focusgate"), []string{"serve"}, gatewayEnv(up.URL+"/v1", rts.URL+"/v1"), dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, fg.stop()) }()
	targets := []target{{direct, up.URL, nil}, {defaultProxy, std.url, std}, {reverseProxy, bare.url, bare}, {gateway, fg.url, fg}}

	l := &loader{
		client: &http.Client{
			Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute, DisableCompression: true},
			Timeout:   time.Minute,
		},
		warmup: opts.warmup, duration: opts.duration, requests: opts.requests, log: log,
	}
	defer l.client.CloseIdleConnections()

	notes, err := os.ReadFile(opts.notesFile)
	if err != nil {
		return err
	}
	noPage, prose := workload.NoPage(string(notes)), workload.Prose()
	if opts.modelLast {
		if tree.Body, err = workload.ModelLast(tree.Body); err != nil {
			return err
		}
		for _, bodies := range []*func(uint64) []byte{&noPage, &prose} {
			last, err := workload.ModelLast((*bodies)(0))
			if err != nil {
				return err
			}
			*bodies = workload.Renumbered(last)
		}
	}
	rep.noPage, rep.prose = noPage(0), prose(0)
	const noObservation = "skipped; reason=no-observation"
	cases := map[string]bodyCase{
		"nopage": {name: "nopage", bodies: noPage, seq: new(atomic.Uint64),
			answerSize: int64(len(workload.Completion)), gatewayStatus: noObservation},
		"prose": {name: "prose", bodies: prose, seq: new(atomic.Uint64),
			answerSize: int64(len(workload.Completion)), gatewayStatus: noObservation},
		// Each request's page differs from the last in its first line:
		// a cache miss, asking the retriever, on a page whose other lines
		// focusgate counted before (in the warm-up, the first request
		// counts them all).
		"miss": {name: "miss", bodies: missTree.Steps(), seq: new(atomic.Uint64),
			answerSize: int64(len(workload.Completion)), gatewayStatus: "pruned", cache: "miss"},
		"passthrough": {name: "passthrough", body: workload.Chat(false), answerSize: int64(len(workload.Completion)), gatewayStatus: noObservation},
		"stream":      {name: "stream", body: workload.Chat(true), answerSize: streamSize(), gatewayStatus: noObservation},
		"tree":        {name: "tree", body: tree.Body, answerSize: int64(len(workload.Completion)), gatewayStatus: "pruned", cache: "hit"},
		"toolloop": {name: "toolloop", body: workload.ToolLoop(loopModel, steps...),
			answerSize: int64(len(workload.Completion)), gatewayStatus: "pruned", cache: "hit"},
	}
	rep.loopBody = len(cases["toolloop"].body)
	rep.retrieverCalls = map[string]int64{}
	if slices.Contains(opts.cases, "tree") {
		if rep.treeTokensAfter, err = primeCache(ctx, l, cases["tree"], targets[3], tree.Tokens); err != nil {
			return err
		}
		rep.retrieverCalls["tree"] = rt.calls.Load()
	}
	if slices.Contains(opts.cases, "toolloop") {
		calls := rt.calls.Load()
		if rep.loopTokensBefore, rep.loopTokensAfter, err = primeToolLoop(ctx, l, steps, targets[3]); err != nil {
			return err
		}
		rep.retrieverCalls["toolloop"] = rt.calls.Load() - calls
	}

	// Rounds go outermost so that a change in the machine's load between
	// rounds falls on every target alike.
	for round := range opts.rounds {
		for _, name := range opts.cases {
			for _, clients := range opts.concurrency {
				var ts []target
				for _, t := range targets {
					// httputil.ReverseProxy forwarding the request body as a
					// stream cuts streamed answers short now and then (its read
					// of the upstream's answer fails with "use of closed network
					// connection"), and a baseline that drops answers cannot be
					// measured; the tuned proxy buffers the body.
					if t.name != defaultProxy || name != "stream" {
						ts = append(ts, t)
					}
				}
				batches := [][]target{ts}
				if !opts.interleave {
					batches = nil
					for _, t := range ts {
						batches = append(batches, []target{t})
					}
				}
				for _, batch := range batches {
					calls := rt.calls.Load()
					results, err := l.runTogether(ctx, cases[name], clients, batch)
					rep.retrieverCalls[name] += rt.calls.Load() - calls
					if err != nil {
						err = fmt.Errorf("round %d, %s, %d clients, %s: %w", round+1, name, clients, names(batch), err)
						for _, t := range batch {
							if t.proc != nil {
								err = fmt.Errorf("%w; %s's log ends:\n%s", err, t.name, t.proc.logTail())
							}
						}
						return err
					}
					for _, res := range results {
						res.round = round
						log.Info("run", "round", round+1, "case", name, "clients", clients, "target", res.target, "requests", res.requests,
							"rps", int(res.rps()), "p50", res.p50, "p99", res.p99, "cpu", res.cpu)
						rep.results = append(rep.results, res)
					}
				}
			}
		}
	}
	rep.loadAfter = loadAverage()
	return rep.write(stdout)
}

// names joins the targets' names for an error.
func names(ts []target) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.name
	}
	return strings.Join(s, ", ")
}

// loopModel is the model the toolloop case's requests name, dated as agents
// pin it.
const loopModel = "gpt-4.1-2025-04-14"

// primeToolLoop sends the toolloop case's request as the agent sent it at
// each step, one page more each time, so that focusgate asks the retriever
// about each page when it is the newest and caches its selection: in the
// whole request, every page is then a cache hit. It returns the tokens of
// the pages focusgate counted in the whole request and forwarded.
func primeToolLoop(ctx context.Context, l *loader, steps [][2]string, fg target) (before, after int, err error) {
	c := bodyCase{name: "toolloop", answerSize: int64(len(workload.Completion)), gatewayStatus: "pruned"}
	var resp *http.Response
	for n := 1; n <= len(steps); n++ {
		c.body = workload.ToolLoop(loopModel, steps[:n]...)
		if resp, err = l.send(ctx, c, fg); err != nil {
			return 0, 0, fmt.Errorf("toolloop request of %d steps: %w", n, err)
		}
	}
	if before, err = strconv.Atoi(resp.Header.Get(proxy.HeaderTokensBefore)); err != nil {
		return 0, 0, fmt.Errorf("toolloop: %s: %w", proxy.HeaderTokensBefore, err)
	}
	if after, err = strconv.Atoi(resp.Header.Get(proxy.HeaderTokensAfter)); err != nil {
		return 0, 0, fmt.Errorf("toolloop: %s: %w", proxy.HeaderTokensAfter, err)
	}
	return before, after, nil
}

// primeCache sends the tree case's request once, which makes focusgate ask
// the retriever and cache the selection, so that every measured request is
// a cache hit. It checks that focusgate counts the tokens the workload says
// and returns how many it forwards.
func primeCache(ctx context.Context, l *loader, c bodyCase, fg target, tokens int) (int, error) {
	c.cache = ""
	resp, err := l.send(ctx, c, fg)
	if err != nil {
		return 0, fmt.Errorf("first tree request: %w", err)
	}
	if got := resp.Header.Get(proxy.HeaderTokensBefore); got != strconv.Itoa(tokens) {
		return 0, fmt.Errorf("first tree request: focusgate counted %s tokens, the workload %d", got, tokens)
	}
	return strconv.Atoi(resp.Header.Get(proxy.HeaderTokensAfter))
}
