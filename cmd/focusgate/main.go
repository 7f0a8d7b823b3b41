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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "focusgate: %v\n", err)
		os.Exit(1)
	}
}

const usage = `focusgate prunes the web pages that agents send to their model.

Usage:
  focusgate [serve] [flags]      run the gateway
  focusgate prune [flags] [FILE] prune one observation (FILE or stdin) with the configured retriever
  focusgate prune --request [--api chat|responses|messages] [flags] [FILE]
                                 run a whole request body through the gateway's pipeline: the bytes it
                                 would forward on stdout, the outcome on stderr
  focusgate eval [flags]         compare pruning strategies on recorded agent steps

Run "focusgate COMMAND --help" for a command's flags and settings.
`

// run is the whole program behind main, with its environment passed in so
// that tests can run it in-process.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	name, rest := "serve", args[1:]
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		name, rest = rest[0], rest[1:]
	}
	var err error
	switch name {
	case "serve":
		err = serve(ctx, rest, getenv, stdout, stderr)
	case "prune":
		err = prunePage(ctx, rest, getenv, stdin, stdout, stderr)
	case "eval":
		err = evaluate(ctx, rest, getenv, stdout, stderr)
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
