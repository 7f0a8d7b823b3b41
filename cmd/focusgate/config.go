package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/focusgate/focusgate/config"
	"github.com/focusgate/focusgate/internal/logbuf"
	"github.com/focusgate/focusgate/internal/redact"
)

// parseFlags loads the configuration from the environment, lets the command
// line override it, and validates the result, reporting every problem at
// once, each once: a value that does not parse, a value out of bounds, a
// table of prices or context windows that does not read. addFlags declares
// the command's own flags; synopsis heads its --help, which lists the
// settings the command reads. On --help it prints the command's usage to
// stdout and returns flag.ErrHelp.
func parseFlags(name, synopsis string, args []string, getenv func(string) string, stdout io.Writer, addFlags func(*flag.FlagSet)) (config.Config, *flag.FlagSet, error) {
	cfg, loadErr := config.Load(getenv)
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// Parse errors are returned to main, which prints them once.
	fs.SetOutput(io.Discard)
	if addFlags != nil {
		addFlags(fs)
	}
	cfg.RegisterFlags(fs, name)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: focusgate %s\n", synopsis)
			config.PrintSettings(stdout, fs, name)
		}
		return cfg, fs, err
	}
	_, pricesErr := loadPrices(cfg)
	_, windowsErr := loadWindows(cfg)
	if err := errors.Join(loadErr, cfg.Validate(), pricesErr, windowsErr); err != nil {
		return cfg, fs, fmt.Errorf("invalid configuration:\n%w", err)
	}
	return cfg, fs, nil
}

// warnUnknown warns, once at start, about each FOCUSGATE_ variable of the
// process's environment that names no setting (config.UnknownVariables).
func warnUnknown(log *slog.Logger) {
	for _, w := range config.UnknownVariables(os.Environ()) {
		log.Warn(w)
	}
}

// newLogger writes cfg's log format and level to w, scrubbing keys (see
// newRedactor) from every line.
func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	return newLoggerWith(cfg, w, newRedactor(cfg))
}

func newLoggerWith(cfg config.Config, w io.Writer, secrets *redact.Redactor) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	if sink, ok := w.(*logbuf.Writer); ok {
		h = logbuf.NewHandler(h, sink)
	}
	return slog.New(redact.NewHandler(h, secrets))
}
