package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/prune"

	"github.com/focusgate/focusgate"
)

// errFailedOpen makes the prune command exit 1 after printing the original
// observation: the page is not lost in a pipeline, but the failure shows.
var errFailedOpen = errors.New("the observation could not be pruned")

// prunePage prunes one observation from a file or stdin with the configured
// retriever: the page with its tree pruned on stdout, statistics on stderr.
func prunePage(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	var goal, history, model string
	cfg, fs, err := parseFlags("prune", "prune [--goal TEXT] [--mode M] [flags] [FILE]", args, getenv, stdout, func(fs *flag.FlagSet) {
		fs.StringVar(&goal, "goal", "", "the agent's goal at this step")
		fs.StringVar(&history, "history", "", "what the agent did so far (optional)")
		fs.StringVar(&model, "model", "gpt-4.1", "the action model, whose tokenizer counts the tokens")
	})
	if err != nil {
		return err
	}
	in, name := stdin, "stdin"
	switch fs.NArg() {
	case 0:
	case 1:
		name = fs.Arg(0)
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	default:
		return fmt.Errorf("prune takes at most one FILE, got %d", fs.NArg())
	}
	page, err := io.ReadAll(io.LimitReader(in, cfg.MaxBodyBytes+1))
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	if int64(len(page)) > cfg.MaxBodyBytes {
		return fmt.Errorf("%s is larger than %d bytes (FOCUSGATE_MAX_BODY_BYTES)", name, cfg.MaxBodyBytes)
	}
	b, ok := detect.Page(string(page))
	if !ok {
		return fmt.Errorf("no page observation found in %s", name)
	}

	log := newLogger(cfg, stderr)
	pr, err := newPruning(cfg, log)
	if err != nil {
		return err
	}
	defer pr.Close()
	res := pr.pruner.Prune(ctx, prune.Input{
		Tree:    prune.NewTree(string(page[b.Start:b.End]), b.Format, b.Lines, b.FocusedBID),
		Goal:    goal,
		History: history,
		Mode:    focusgate.Mode(cfg.Mode),
		Variant: focusgate.Variant(cfg.Prompt),
		Model:   model,
		// Without a configured key, a command-line user's own key serves.
		APIKey: getenv("OPENAI_API_KEY"),
	})

	if _, err := fmt.Fprintf(stdout, "%s%s%s", page[:b.Start], res.Text, page[b.End:]); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: %s, %d lines (%s), %d -> %d tokens", name, res.Status, len(b.Lines), b.Format, res.TokensBefore, res.TokensAfter)
	if res.TokensBefore > 0 && res.Status == focusgate.Pruned {
		fmt.Fprintf(stderr, " (%.1f%% fewer)", 100*(1-float64(res.TokensAfter)/float64(res.TokensBefore)))
	}
	if res.Reason != "" {
		fmt.Fprintf(stderr, ", reason %s", res.Reason)
	}
	fmt.Fprintf(stderr, ", mode %s, prompt %s, retriever %s %dms, cache %s", cfg.Mode, cfg.Prompt, cfg.RetrieverModel, res.RetrieverTime.Milliseconds(), res.Cache)
	if res.Flagged > 0 {
		fmt.Fprintf(stderr, ", %d injection lines removed", res.Flagged)
	}
	fmt.Fprintln(stderr)
	if res.Status == focusgate.FailedOpen {
		return fmt.Errorf("%w: %s", errFailedOpen, res.Reason)
	}
	return nil
}
