// Command focusgate runs the gateway and its offline tools. It only wires:
// configuration in, concrete types built and handed to the packages that do
// the work.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	// The first SIGINT or SIGTERM starts a graceful shutdown; a second one
	// ends its grace period at once, for an operator who cannot wait.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, stop := context.WithCancel(context.Background())
	hurry, hurried := context.WithCancel(context.Background())
	go func() {
		<-sigs
		stop()
		<-sigs
		hurried()
	}()
	ctx = withHurry(ctx, hurry)
	if err := run(ctx, os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "focusgate: %v\n", err)
		os.Exit(exitCode(err))
	}
}

// exitCode is the exit status for an error of run: the one the error
// carries (see inputError), else 1.
func exitCode(err error) int {
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		return coded.ExitCode()
	}
	return 1
}

type hurryKey struct{}

// withHurry attaches to ctx a context that ends when the shutdown that ctx's
// end starts must not wait any longer (a second signal).
func withHurry(ctx, hurry context.Context) context.Context {
	return context.WithValue(ctx, hurryKey{}, hurry)
}

// hurryFrom is the context withHurry attached, or one that never ends.
func hurryFrom(ctx context.Context) context.Context {
	if h, ok := ctx.Value(hurryKey{}).(context.Context); ok {
		return h
	}
	return context.Background()
}

const usage = `focusgate prunes the web pages that agents send to their model.

Usage:
  focusgate [serve] [flags]      run the gateway
  focusgate prune [flags] [FILE] prune one observation (FILE or stdin) with the configured retriever
  focusgate prune --request [--api chat|responses|messages|gemini|converse] [--provider NAME] [flags] [FILE]
                                 run a whole request body through the gateway's pipeline: the bytes it
                                 would forward on stdout, the outcome on stderr
  focusgate eval [flags]         compare pruning strategies on recorded agent steps
  focusgate health [--url URL]   exit 0 if the gateway at URL answers /healthz, else 1 (for container
                                 healthchecks: the image has no shell or curl)
  focusgate version              the version, commit and Go version it was built with (also --version)

Run "focusgate COMMAND --help" for a command's flags and settings.
`

// run is the whole program behind main, with its environment passed in so
// that tests can run it in-process.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	name, rest := "serve", args[1:]
	if len(rest) > 0 && (!strings.HasPrefix(rest[0], "-") || rest[0] == "--version" || rest[0] == "-version") {
		name, rest = strings.TrimLeft(rest[0], "-"), rest[1:]
	}
	var err error
	switch name {
	case "serve":
		err = serve(ctx, rest, getenv, stdout, stderr)
	case "prune":
		err = prunePage(ctx, rest, getenv, stdin, stdout, stderr)
	case "eval":
		err = evaluate(ctx, rest, getenv, stdout, stderr)
	case "health":
		err = health(ctx, rest, getenv, stdout, stderr)
	case "version":
		printVersion(stdout)
	case "help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", name)
	}
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}
