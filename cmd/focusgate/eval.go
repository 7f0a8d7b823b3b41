package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cloudauth"
	"github.com/focusgate/focusgate/config"
	"github.com/focusgate/focusgate/eval"
	"github.com/focusgate/focusgate/prune"
)

// defaultTraces is the dev set in the repository, evaluated when the
// command runs from a checkout without --data, so that a new user sees
// results at once.
const defaultTraces = "testdata/traces/browsergym-dev.jsonl.gz"

// defaultBudget is the baselines' token budget: below the median dev-trace
// tree (about 2,700 tokens), so that the baselines have to choose.
const defaultBudget = 2000

// evalMemoBytes bounds the memo of token counts of `focusgate eval`.
const evalMemoBytes = 32 << 20

// evaluate compares pruning strategies on recorded agent steps: a table (or
// JSON) on stdout, progress and notes on stderr.
func evaluate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var (
		data        string
		names       []string
		budgets     []int
		limit       int
		asJSON      bool
		model       string
		concurrency int
		logFile     string
	)
	cfg, fs, err := parseFlags("eval", "eval [--data FILE.jsonl[.gz]] [--strategy llm,truncate,bm25] [--budget TOKENS[,TOKENS...]] [--limit N] [--json] [flags]\n   or: eval --conversations GATEWAY.log[.gz] [--json]",
		args, getenv, stdout, func(fs *flag.FlagSet) {
			fs.StringVar(&data, "data", "", "recorded agent steps, JSONL, gzip-compressed or plain; by default "+defaultTraces+" when it exists")
			fs.Func("strategy", "strategies to compare, comma-separated or repeated: llm, truncate, bm25; by default llm,truncate,bm25 with an API key, else truncate,bm25", func(s string) error {
				for name := range strings.SplitSeq(s, ",") {
					name = strings.TrimSpace(name)
					if !slices.Contains(eval.StrategyNames, name) {
						return fmt.Errorf("unknown strategy %q (want %s)", name, strings.Join(eval.StrategyNames, ", "))
					}
					names = append(names, name)
				}
				return nil
			})
			fs.Func("budget", "token budgets of the truncate and bm25 baselines, comma-separated or repeated, each with rows of its own; by default "+strconv.Itoa(defaultBudget), func(s string) error {
				for v := range strings.SplitSeq(s, ",") {
					n, err := strconv.Atoi(strings.TrimSpace(v))
					if err != nil || n <= 0 {
						return fmt.Errorf("budget %q is not a positive number of tokens", v)
					}
					budgets = append(budgets, n)
				}
				return nil
			})
			fs.IntVar(&limit, "limit", 0, "evaluate only the first N steps (0: all)")
			fs.BoolVar(&asJSON, "json", false, "write the results to stdout as JSON instead of a table")
			fs.StringVar(&model, "model", "gpt-4.1", "the action model, whose tokenizer counts tokens and whose input price values the saving")
			fs.IntVar(&concurrency, "concurrency", 8, "steps evaluated at once, which bounds the retriever calls in flight")
			fs.StringVar(&logFile, "conversations", "", "instead of traces, compare the pruned arm with the holdout (FOCUSGATE_HOLDOUT) from the conversation lines of a gateway log, text or JSON, gzip-compressed or plain")
		})
	if err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("eval takes no arguments, got %q (use --data FILE)", fs.Args())
	case limit < 0:
		return fmt.Errorf("--limit must not be negative, got %d", limit)
	case concurrency < 1:
		return fmt.Errorf("--concurrency must be at least 1, got %d", concurrency)
	case logFile != "":
		return compareConversations(logFile, asJSON, stdout, stderr)
	}

	// As for `focusgate prune`, a command-line user's own key of the
	// retriever's provider serves when none is configured.
	retriever := cfg.WithUserKeys(getenv).RetrieverFor(focusgate.DefaultProvider, focusgate.APIChat)
	key := retriever.Key
	keyVars := config.Prefix + "RETRIEVER_API_KEY"
	if p := retriever.Provider; p.Key.Name != "" {
		keyVars += ", " + config.Prefix + p.Key.Name + " or " + p.ClientKeyEnv
	}
	switch {
	case len(names) == 0 && key != "":
		names = eval.StrategyNames
	case len(names) == 0:
		names = []string{"truncate", "bm25"}
		fmt.Fprintf(stderr, "focusgate eval: no API key (%s): llm skipped, running the baselines only\n", keyVars)
	case key == "" && slices.Contains(names, "llm"):
		fmt.Fprintf(stderr, "focusgate eval: no API key (%s): calling the retriever without one\n", keyVars)
	}
	if len(budgets) == 0 {
		budgets = []int{defaultBudget}
	}
	budgets = slices.Compact(slices.Sorted(slices.Values(budgets)))

	if data == "" {
		if _, err := os.Stat(defaultTraces); err != nil {
			return fmt.Errorf("--data is required (there is no %s here)", defaultTraces)
		}
		data = defaultTraces
	}
	traces, err := eval.ReadTraceFile(data, limit)
	if err != nil {
		return err
	}
	prices, err := loadPrices(cfg)
	if err != nil {
		return err
	}

	var llm *eval.LLM
	if slices.Contains(names, "llm") {
		r, err := newRetriever(cfg, retriever, cloudauth.For(retriever.Provider, key, cloudauth.Options{Getenv: getenv}))
		if err != nil {
			return err
		}
		llm = &eval.LLM{Retriever: r, RetrieverModel: retriever.Model, Variant: focusgate.Variant(cfg.Prompt), UseHistory: cfg.RetrieverHistory}
	}
	strategies := eval.Strategies(names, budgets, llm)

	start := time.Now()
	results, skipped, err := eval.Run(ctx, traces, eval.Options{
		Strategies:  strategies,
		Mode:        focusgate.Mode(cfg.Mode),
		Model:       model,
		Counter:     prune.NewCounter(evalMemoBytes),
		Concurrency: concurrency,
		Progress:    terminal(stderr),
	})
	if err != nil {
		return err
	}
	report := eval.Summarize(results, skipped, prices, model)
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(report)
	} else {
		err = report.WriteTable(stdout)
	}
	if err != nil {
		return err
	}
	used := ""
	if slices.Contains(names, "llm") {
		used = fmt.Sprintf(", retriever %s with prompt %s", retriever.Model, cfg.Prompt)
	}
	fmt.Fprintf(stderr, "focusgate eval: %d steps of %s (%d skipped), mode %s%s, tokens counted for %s, %s\n",
		len(traces), data, len(skipped), cfg.Mode, used, model, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// terminal returns w when it is a terminal, where a progress bar redrawn in
// place makes sense, and nil otherwise: redirected to a file or a pipe, a
// bar would only be noise.
func terminal(w io.Writer) io.Writer {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return f
}
