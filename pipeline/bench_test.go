package pipeline_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/bench/workload"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/pipeline"
	"github.com/focusgate/focusgate/prune"
)

// hotPath is a kind of request the gateway sees most, ready to be rewritten
// again and again: the benchmarks time it and TestAllocationBudgets holds
// what it allocates to a baseline.
type hotPath struct {
	name string
	// setup builds a pipeline as the gateway runs it, sends what must come
	// first (the request that fills the cache), and returns the nth request
	// and the outcome each must have.
	setup func(tb testing.TB) (p *pipeline.Pipeline, req func(n uint64) focusgate.Request, want outcomeWant)
}

// outcomeWant is what a hot path's requests must come out as, so that a
// benchmark measures what it claims.
type outcomeWant struct {
	status focusgate.Status
	reason focusgate.Reason
	cache  focusgate.CacheOutcome
}

func (w outcomeWant) check(out focusgate.Outcome) error {
	if out.Status != w.status || out.Reason != w.reason || out.Cache != w.cache {
		return fmt.Errorf("outcome %s %s, cache %q; want %s %s, cache %q", out.Status, out.Reason, out.Cache, w.status, w.reason, w.cache)
	}
	return nil
}

const (
	benchRequest = "../testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json"
	benchTree    = "../testdata/axtrees/bgym-pr301_web_amazon_macbook.txt"
)

// benchRetriever keeps the lines workload.Keep keeps, whatever the page, at
// once.
type benchRetriever struct{}

func (benchRetriever) Select(_ context.Context, q prune.Query) (prune.Selection, error) {
	return prune.Selection{Ranges: workload.Keep(q.Lines)}, nil
}

// benchPipeline is the pipeline cmd/focusgate builds with its default
// memory settings and economics gate, over an in-process cache and a
// retriever that answers at once.
func benchPipeline(configure ...func(*pipeline.Options)) *pipeline.Pipeline {
	pr := prune.New(prune.Config{
		RetrieverModel:   "gpt-4.1-mini",
		MinTokens:        1000,
		UseHistory:       true,
		Counter:          prune.NewCounter(16 << 20),
		PageKeyMemoBytes: 8 << 20,
		AppliedMemoBytes: 8 << 20,
	}, benchRetriever{}, cache.New(cache.NewMemory(64<<20, 24*time.Hour), nil))
	opts := pipeline.Options{Pruner: pr, Finder: detect.NewFinder(32 << 20), Mode: focusgate.ModeRemove,
		Variant: focusgate.VariantLine, RetrieverModel: "gpt-4.1-mini", Budget: time.Hour,
		SkipUneconomic: true, ExpectedReduction: 0.5}
	for _, c := range configure {
		c(&opts)
	}
	return pipeline.New(opts)
}

// same is a request maker that sends body every time.
func same(body []byte) func(uint64) focusgate.Request {
	return func(uint64) focusgate.Request { return chat(body) }
}

// primed sends req's first request, which asks the retriever and fills the
// cache, so that the next ones are cache hits.
func primed(tb testing.TB, p *pipeline.Pipeline, req func(uint64) focusgate.Request) {
	tb.Helper()
	if _, out := rewrite(p, req(0)); out.Status != focusgate.StatusPruned {
		tb.Fatalf("the first request went out %s %s", out.Status, out.Reason)
	}
}

func benchTreeOf(tb testing.TB, tokens int) workload.Tree {
	tb.Helper()
	tree, err := workload.NewTree(benchRequest, benchTree, tokens)
	if err != nil {
		tb.Fatal(err)
	}
	return tree
}

var (
	noObservation = outcomeWant{status: focusgate.StatusSkipped, reason: focusgate.ReasonNoObservation}
	hit           = outcomeWant{status: focusgate.StatusPruned, cache: focusgate.CacheHit}
)

// wrapperStacks are a page as clients wrap it, each a tool output: as the
// tool printed it, read back from a file with line numbers, in opencode's
// read envelope, passed through JSON.stringify, saved as JSON and read back,
// stringified and cut by Cline, cut by Gemini CLI.
var wrapperStacks = []struct {
	name string
	wrap func(tb testing.TB, page string) string
}{
	{"page", func(_ testing.TB, page string) string { return page }},
	{"gutter", func(_ testing.TB, page string) string { return numberLines(page, "%d\t") }},
	{"envelope+gutter", func(_ testing.TB, page string) string {
		return "<path>/tmp/tool-output/tool_1</path>\n<type>file</type>\n<content>\n" + numberLines(page, "%d: ") + "\n\n(End of file - total 900 lines)\n</content>"
	}},
	{"json", func(tb testing.TB, page string) string {
		return `[{"type":"text","text":"` + stringify(tb, page) + `"}]`
	}},
	{"json+gutter", func(tb testing.TB, page string) string {
		file := "[\n  {\n    \"type\": \"text\",\n    \"text\": \"" + stringify(tb, page) + "\"\n  }\n]"
		return numberLines(file, "%6d\t") + "\n\n<system-reminder>\nx\n</system-reminder>"
	}},
	{"json+cut", func(tb testing.TB, page string) string {
		js := `[{"type":"text","text":"` + stringify(tb, page) + `"}]`
		return js[:len(js)/2] + "\n\n...[truncated 24310 chars]...\n\n" + js[len(js)/2+2000:]
	}},
	{"cut", func(_ testing.TB, page string) string {
		return page[:len(page)/2] + "\n... [18230 characters omitted] ...\n" + page[len(page)/2+3000:]
	}},
}

// hotPaths are the requests the gateway's budgets are about (see
// BENCHMARKS.md): ordinary chat bodies with no page (1.2 KB, and 16 KB of
// list items or of prose, each new), a cache hit on an 80k-token page (with
// the model named first, and after the conversation), a tool loop's request
// whose every page is a cache hit, the same request held out, a miss on a
// 60k-token page whose lines were all counted before but one, the skips
// (the inspection budget full, a body that is not JSON, one the gateway
// could not decode), and a cache hit on a page in each client's wrappers,
// whose splice writes the page back through them.
func hotPaths() []hotPath {
	paths := []hotPath{
		{"passthrough/chat", func(tb testing.TB) (*pipeline.Pipeline, func(uint64) focusgate.Request, outcomeWant) {
			return benchPipeline(), same(workload.Chat(false)), noObservation
		}},
		{"passthrough/list-items", func(tb testing.TB) (*pipeline.Pipeline, func(uint64) focusgate.Request, outcomeWant) {
			notes, err := os.ReadFile(filepath.Join("..", workload.NotesFile))
			if err != nil {
				tb.Fatal(err)
			}
			bodies := workload.NoPage(string(notes))
			return benchPipeline(), func(n uint64) focusgate.Request { return chat(bodies(n)) }, noObservation
		}},
		{"passthrough/prose", func(tb testing.TB) (*pipeline.Pipeline, func(uint64) focusgate.Request, outcomeWant) {
			bodies := workload.Prose()
			return benchPipeline(), func(n uint64) focusgate.Request { return chat(bodies(n)) }, noObservation
		}},
		{"passthrough/prose/model-last", func(tb testing.TB) (*pipeline.Pipeline, func(uint64) focusgate.Request, outcomeWant) {
			// The Python SDKs of OpenAI and Anthropic name the model after
			// the conversation.
			bodies := workload.Renumbered(modelLast(tb, workload.Prose()(0)))
			return benchPipeline(), func(n uint64) focusgate.Request { return chat(bodies(n)) }, noObservation
		}},
		{"hit/80k", func(tb testing.TB) (*pipeline.Pipeline, func(uint64) focusgate.Request, outcomeWant) {
			p, req := benchPipeline(), same(benchTreeOf(tb, 80000).Body)
			primed(tb, p, req)
			return p, req, hit
		}},
		{"hit/80k/model-last", func(tb testing.TB) (*pipeline.Pipeline, func(uint64) focusgate.Request, outcomeWant) {
			p, req := benchPipeline(), same(modelLast(tb, benchTreeOf(tb, 80000).Body))
			primed(tb, p, req)
			return p, req, hit
		}},
		{"hit/toolloop", func(tb testing.TB) (*pipeline.Pipeline, func(uint64) focusgate.Request, outcomeWant) {
			// Each step's page was the newest once, and pruned then: the
			// request re-applies every selection from the cache.
			p, steps := benchPipeline(), toolLoopSteps(tb)
			for n := 1; n <= len(steps); n++ {
				primed(tb, p, same(workload.ToolLoop("gpt-4.1", steps[:n]...)))
			}
			return p, same(workload.ToolLoop("gpt-4.1", steps...)), hit
		}},
		{"holdout/toolloop", func(tb testing.TB) (*pipeline.Pipeline, func(uint64) focusgate.Request, outcomeWant) {
			// A held-out conversation's request is read for the comparison
			// of the arms, and nothing of it is remembered.
			body := workload.ToolLoop("gpt-4.1", toolLoopSteps(tb)...)
			return benchPipeline(), func(uint64) focusgate.Request {
				return focusgate.Request{API: focusgate.APIChat, Body: body, Holdout: true}
			}, outcomeWant{status: focusgate.StatusSkipped, reason: focusgate.ReasonHoldout}
		}},
		{"miss/60k", func(tb testing.TB) (*pipeline.Pipeline, func(uint64) focusgate.Request, outcomeWant) {
			p, steps := benchPipeline(), benchTreeOf(tb, 60000).Steps()
			// The first step counts every line; each later one is a page
			// never seen whole.
			req := func(n uint64) focusgate.Request { return chat(steps(n)) }
			primed(tb, p, req)
			return p, func(n uint64) focusgate.Request { return req(n + 1) }, outcomeWant{status: focusgate.StatusPruned, cache: focusgate.CacheMiss}
		}},
		{"skip/busy", func(tb testing.TB) (*pipeline.Pipeline, func(uint64) focusgate.Request, outcomeWant) {
			p := benchPipeline(func(o *pipeline.Options) { o.InspectBudgetBytes = 64 << 10 })
			return p, same(benchTreeOf(tb, 80000).Body), outcomeWant{status: focusgate.StatusSkipped, reason: focusgate.ReasonBusy}
		}},
		{"skip/not-json", func(tb testing.TB) (*pipeline.Pipeline, func(uint64) focusgate.Request, outcomeWant) {
			body := append(benchTreeOf(tb, 80000).Body, " and more"...)
			return benchPipeline(), same(body), outcomeWant{status: focusgate.StatusSkipped, reason: focusgate.ReasonNotJSON}
		}},
		{"skip/undecodable", func(tb testing.TB) (*pipeline.Pipeline, func(uint64) focusgate.Request, outcomeWant) {
			body := benchTreeOf(tb, 80000).Body
			return benchPipeline(), func(uint64) focusgate.Request {
				return focusgate.Request{API: focusgate.APIChat, Body: body, Unread: focusgate.ReasonUndecodable}
			}, outcomeWant{status: focusgate.StatusSkipped, reason: focusgate.ReasonUndecodable}
		}},
	}
	for _, w := range wrapperStacks {
		paths = append(paths, hotPath{"wrapped/" + w.name, func(tb testing.TB) (*pipeline.Pipeline, func(uint64) focusgate.Request, outcomeWant) {
			page := readPage(tb, "bgym-pr301_web_apple_buy_ipad_pro.txt")
			p, req := benchPipeline(), same(jsToolLoop(tb, [2]string{"read", w.wrap(tb, page)}))
			primed(tb, p, req)
			return p, req, hit
		}})
	}
	return paths
}

// modelLast is body with its "model" member moved after the others, where
// the Python SDKs of OpenAI and Anthropic write it (after "messages"), as
// AgentLab and browser-use send their requests.
func modelLast(tb testing.TB, body []byte) []byte {
	tb.Helper()
	out, err := workload.ModelLast(body)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// toolLoopSteps are the steps of a tool loop that has browsed every page of
// testdata/axtrees, each read by a snapshot tool.
func toolLoopSteps(tb testing.TB) [][2]string {
	tb.Helper()
	steps, err := workload.ToolLoopSteps(filepath.Join("..", workload.PagesDir))
	if err != nil {
		tb.Fatal(err)
	}
	return steps
}

// BenchmarkRewrite measures the pipeline's work on each hot path, body in,
// body and outcome out: no HTTP (see proxy's benchmarks for the gateway
// around it). A rewritten body is given back to its pool, as the gateway
// gives it back once it has gone upstream.
func BenchmarkRewrite(b *testing.B) {
	for _, hp := range hotPaths() {
		b.Run(hp.name, func(b *testing.B) {
			p, req, want := hp.setup(b)
			b.ReportAllocs()
			for n := uint64(0); b.Loop(); n++ {
				r := req(n)
				body, out := rewrite(p, r)
				if want.check(out) != nil {
					b.Fatal(want.check(out))
				}
				giveBack(body, r)
			}
		})
	}
}
