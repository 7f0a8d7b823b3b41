package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/config"
	"github.com/focusgate/focusgate/detect"
	"github.com/focusgate/focusgate/prune"
)

// errFailedOpen makes the prune command exit 1 after printing the original
// observation: the page is not lost in a pipeline, but the failure shows.
var errFailedOpen = errors.New("the observation could not be pruned")

// inputError is an error of the prune command that left it nothing to
// print: bad flags or arguments, a configuration error, input it cannot
// read, input over the cap. The command exits 2 for it, keeping 1 for
// "failed open", when the input was printed unchanged, so that a script
// can tell the two apart.
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }
func (e inputError) Unwrap() error { return e.err }

// ExitCode is the process's exit status for the error.
func (inputError) ExitCode() int { return 2 }

// prunePage prunes one observation from a file or stdin with the configured
// retriever: the page with its tree pruned on stdout, statistics on stderr.
// With --request, the input is a whole request body instead (see
// pruneRequest). Every error but errFailedOpen is an inputError.
func prunePage(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	err := prunePageOrFail(ctx, args, getenv, stdin, stdout, stderr)
	if err != nil && !errors.Is(err, errFailedOpen) && !errors.Is(err, flag.ErrHelp) {
		return inputError{err}
	}
	return err
}

func prunePageOrFail(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	var goal, history, model, api, provider string
	var request bool
	cfg, fs, err := parseFlags("prune", "prune [--goal TEXT] [--mode M] [flags] [FILE]\n       focusgate prune --request [--api chat|responses|messages|gemini|converse] [--provider NAME] [flags] [FILE]", args, getenv, stdout, func(fs *flag.FlagSet) {
		fs.StringVar(&goal, "goal", "", "the agent's goal at this step")
		fs.StringVar(&history, "history", "", "what the agent did so far (optional)")
		fs.StringVar(&model, "model", "gpt-4.1", "the action model, whose tokenizer counts the tokens")
		fs.BoolVar(&request, "request", false, "the input is a whole request body: print exactly the bytes the gateway would forward, and the outcome on stderr")
		fs.StringVar(&api, "api", "", "with --request, the API the body was written for: chat, responses, messages, gemini or converse; by default told from the body's shape")
		fs.StringVar(&provider, "provider", "", "with --request, the provider the body is sent to, whose retriever prunes it: "+strings.Join(focusgate.ProviderNames(), ", ")+"; by default openai, anthropic or gemini, as the API says; bedrock for converse")
	})
	if err != nil {
		return err
	}
	// The command is its user's own client: each retriever is called with
	// the user's key of the provider it speaks, where none is configured.
	cfg = cfg.WithUserKeys(getenv)
	name, page, err := readInput(ctx, fs, stdin, cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	if request {
		return pruneRequest(ctx, cfg, getenv, name, page, api, provider, stdout, stderr)
	}
	b, ok := detect.Page(string(page))
	if !ok {
		return fmt.Errorf("no page observation found in %s", name)
	}

	log := newLogger(cfg, stderr)
	warnUnknown(log)
	pr, err := newPruning(cfg, getenv, false, log)
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
	})

	if _, err := fmt.Fprintf(stdout, "%s%s%s", page[:b.Start], res.Text, page[b.End:]); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: %s, %d lines (%s), %d -> %d tokens", name, res.Status, len(b.Lines), b.Format, res.TokensBefore, res.TokensAfter)
	if res.TokensBefore > 0 && res.Status == focusgate.StatusPruned {
		fmt.Fprintf(stderr, " (%.1f%% fewer)", 100*(1-float64(res.TokensAfter)/float64(res.TokensBefore)))
	}
	if res.Reason != "" {
		fmt.Fprintf(stderr, ", reason %s", res.Reason)
	}
	fmt.Fprintf(stderr, ", mode %s, prompt %s, retriever %s %dms, cache %s", cfg.Mode, cfg.Prompt, cfg.RetrieverFor(focusgate.DefaultProvider, focusgate.APIChat).Model, res.RetrieverTime.Milliseconds(), res.Cache)
	if res.Flagged > 0 {
		fmt.Fprintf(stderr, ", %d injection lines removed", res.Flagged)
	}
	fmt.Fprintln(stderr)
	if res.Status == focusgate.StatusFailedOpen {
		return fmt.Errorf("%w: %s", errFailedOpen, res.Reason)
	}
	return nil
}

// readInput reads FILE, the flag set's only argument, or stdin without one,
// up to limit bytes. It gives up when ctx ends (SIGTERM): a FIFO that nobody
// opens for writing, or a stdin nobody writes to, blocks in the kernel, so
// the reading is left to a goroutine that the process's exit ends.
func readInput(ctx context.Context, fs *flag.FlagSet, stdin io.Reader, limit int64) (string, []byte, error) {
	name := "stdin"
	switch fs.NArg() {
	case 0:
	case 1:
		name = fs.Arg(0)
	default:
		return name, nil, fmt.Errorf("prune takes at most one FILE, got %d", fs.NArg())
	}
	type result struct {
		data []byte
		err  error
	}
	read := make(chan result, 1)
	go func() {
		data, err := readAll(name, fs.NArg() == 1, stdin, limit)
		read <- result{data, err}
	}()
	select {
	case r := <-read:
		return name, r.data, r.err
	case <-ctx.Done():
		return name, nil, fmt.Errorf("reading %s: %w", name, context.Cause(ctx))
	}
}

// readAll reads the file name (or stdin) whole, up to limit bytes.
func readAll(name string, isFile bool, stdin io.Reader, limit int64) ([]byte, error) {
	in := stdin
	if isFile {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	}
	data, err := io.ReadAll(io.LimitReader(in, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes (FOCUSGATE_MAX_BODY_BYTES)", name, limit)
	}
	return data, nil
}

// pruneRequest runs a whole request body through the pipeline the gateway
// runs, built from the same settings (FOCUSGATE_REDIS_URL included, so that
// with the team's Redis it sees the gateway's stored selections and
// re-applies them to older pages as the gateway does): stdout gets exactly
// the bytes the gateway would forward, stderr the outcome. Like the gateway,
// it fails open: a body it cannot prune is printed as it came, and the
// command then exits 1 if pruning failed (not if it was skipped).
func pruneRequest(ctx context.Context, cfg config.Config, getenv func(string) string, name string, body []byte, api, provider string, stdout, stderr io.Writer) error {
	kind := detect.APIOf(body)
	if api != "" {
		var err error
		if kind, err = focusgate.ParseAPI(api); err != nil {
			return fmt.Errorf("--api: %w", err)
		}
	}
	p := providerFor(kind)
	if provider != "" {
		if p = focusgate.ProviderNamed(provider); p == nil {
			return fmt.Errorf("--provider: unknown provider %q (want %s)", provider, strings.Join(focusgate.ProviderNames(), ", "))
		}
	}
	log := newLogger(cfg, stderr)
	warnUnknown(log)
	pr, err := newPruning(cfg, getenv, false, log)
	if err != nil {
		return err
	}
	defer pr.Close()
	out, outcome := pr.pipeline.Rewrite(ctx, focusgate.Request{API: kind, Provider: p, Body: body})
	if _, err := stdout.Write(out); err != nil {
		return err
	}
	report := slog.New(slog.NewTextHandler(stderr, nil))
	report.LogAttrs(ctx, slog.LevelInfo, name, outcome.LogAttrs()...)
	if outcome.Status == focusgate.StatusFailedOpen {
		return fmt.Errorf("%w: %s", errFailedOpen, outcome.Reason)
	}
	return nil
}

// providerFor is the provider a body of api is sent to when the command
// line says none: its public API (OpenAI's, Anthropic's or Google's), else
// the first that serves it (a Converse body is Bedrock's). focusgate.Providers
// lists the clouds first, Vertex AI's express mode (an API key, a default
// address) among them, and the public APIs after them: the last provider
// that serves api at a default address with no cloud credential is its
// public API.
func providerFor(api focusgate.API) *focusgate.Provider {
	var public, cloud *focusgate.Provider
	for _, p := range focusgate.Providers {
		for _, rt := range p.Routes {
			if rt.API != api {
				continue
			}
			if p.Cloud == focusgate.CloudNone && p.URL.Default != "" {
				public = p
			}
			if cloud == nil {
				cloud = p
			}
		}
	}
	switch {
	case public != nil:
		return public
	case cloud != nil:
		return cloud
	}
	return focusgate.DefaultProvider
}
