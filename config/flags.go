package config

import (
	"encoding"
	"flag"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/focusgate/focusgate"
)

// Setting describes one setting for help texts and documentation.
type Setting struct {
	Flag    string // e.g. "retriever-timeout"
	Env     string // e.g. "FOCUSGATE_RETRIEVER_TIMEOUT"
	Default string
	Help    string
	// Commands are the commands besides serve that read it.
	Commands []string
}

// UsedBy says whether command (serve, prune, eval) reads the setting.
func (s Setting) UsedBy(command string) bool {
	return command == "serve" || slices.Contains(s.Commands, command)
}

// Settings lists every setting: the gateway's in declaration order, then
// those the providers declare.
func Settings() []Setting {
	fs := fields()
	out := make([]Setting, 0, len(fs))
	for _, f := range fs {
		out = append(out, setting(f.Tag.Get("env"), f.Tag.Get("envDefault"), f.Tag.Get("help"), strings.Fields(f.Tag.Get("cmd"))))
	}
	for _, s := range ProviderSettings() {
		out = append(out, setting(s.Name, s.Default, s.Help, []string{"prune", "eval"}))
	}
	return out
}

func setting(name, def, help string, commands []string) Setting {
	return Setting{Flag: strings.ToLower(strings.ReplaceAll(name, "_", "-")), Env: Prefix + name, Default: def, Help: help, Commands: commands}
}

// fields are the fields of Config read from a variable of their own: those
// with an env tag.
func fields() []reflect.StructField {
	t := reflect.TypeFor[Config]()
	out := make([]reflect.StructField, 0, t.NumField())
	for i := range t.NumField() {
		if f := t.Field(i); f.Tag.Get("env") != "" {
			out = append(out, f)
		}
	}
	return out
}

// RegisterFlags adds a flag to fs for each setting command reads (serve,
// prune, eval), bound to c, so that a flag given on the command line
// overrides the environment. Call it after Load.
func (c *Config) RegisterFlags(fs *flag.FlagSet, command string) {
	v := reflect.ValueOf(c).Elem()
	for _, f := range fields() {
		s := setting(f.Tag.Get("env"), "", f.Tag.Get("help"), strings.Fields(f.Tag.Get("cmd")))
		if s.UsedBy(command) {
			fs.Var(fieldValue{v.FieldByIndex(f.Index), s.Env}, s.Flag, s.Help)
		}
	}
	for _, ps := range ProviderSettings() {
		s := setting(ps.Name, "", ps.Help, nil)
		fs.Var(providerValue{c, ps}, s.Flag, s.Help)
	}
}

// providerValue lets the flag package set a provider's setting.
type providerValue struct {
	c *Config
	s focusgate.Setting
}

func (p providerValue) String() string {
	if p.c == nil {
		return ""
	}
	return p.c.Value(p.s)
}

func (p providerValue) Set(v string) error {
	p.c.Set(p.s, v)
	return nil
}

// PrintSettings writes the flags of fs, then every setting command reads
// with its environment variable and default: the body of each command's
// --help.
func PrintSettings(w io.Writer, fs *flag.FlagSet, command string) {
	own := map[string]bool{}
	for _, s := range Settings() {
		own[s.Flag] = true
	}
	var cmdFlags []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !own[f.Name] {
			cmdFlags = append(cmdFlags, f)
		}
	})
	if len(cmdFlags) > 0 {
		fmt.Fprintln(w, "\nFlags:")
		for _, f := range cmdFlags {
			// A flag without a default value says in its usage what
			// happens without it.
			def := ""
			if f.DefValue != "" {
				def = " (default " + defaultText(f.DefValue) + ")"
			}
			fmt.Fprintf(w, "  --%s%s\n        %s\n", f.Name, def, f.Usage)
		}
	}
	fmt.Fprintln(w, "\nSettings (flag, environment variable, default):")
	for _, s := range Settings() {
		if s.UsedBy(command) {
			fmt.Fprintf(w, "  --%s, %s (default %s)\n        %s\n", s.Flag, s.Env, defaultText(s.Default), s.Help)
		}
	}
}

// defaultText is how help gives a default: quoted, or "empty".
func defaultText(v string) string {
	if v == "" {
		return "empty"
	}
	return strconv.Quote(v)
}

// fieldValue lets the flag package set a Config field with the same syntax
// as its environment variable.
type fieldValue struct {
	v   reflect.Value
	env string // the setting's variable, which errors name as Validate's do
}

func (f fieldValue) String() string {
	if !f.v.IsValid() {
		return ""
	}
	return fmt.Sprint(f.v.Interface())
}

func (f fieldValue) IsBoolFlag() bool { return f.v.IsValid() && f.v.Kind() == reflect.Bool }

func (f fieldValue) Set(s string) error {
	if u, ok := f.v.Addr().Interface().(encoding.TextUnmarshaler); ok {
		if err := u.UnmarshalText([]byte(s)); err != nil {
			return fmt.Errorf("%s: %w", f.env, err)
		}
		return nil
	}
	switch f.v.Interface().(type) {
	case string:
		f.v.SetString(s)
	case bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return wantKind(s, f.v.Type())
		}
		f.v.SetBool(b)
	case time.Duration:
		d, err := time.ParseDuration(s)
		if err != nil {
			return wantKind(s, f.v.Type())
		}
		f.v.SetInt(int64(d))
	case float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return wantKind(s, f.v.Type())
		}
		f.v.SetFloat(x)
	case int, int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return wantKind(s, f.v.Type())
		}
		f.v.SetInt(n)
	default:
		return fmt.Errorf("unsupported setting type %s", f.v.Type())
	}
	return nil
}

// wantKind says, in a user's words rather than a parser's, that value is
// not of the kind a setting of type t takes.
func wantKind(value string, t reflect.Type) error {
	kind := map[reflect.Type]string{
		reflect.TypeFor[bool]():          "true or false",
		reflect.TypeFor[time.Duration](): "a duration such as 500ms, 20s or 10m",
		reflect.TypeFor[float64]():       "a number such as 0.5",
		reflect.TypeFor[int]():           "a whole number",
		reflect.TypeFor[int64]():         "a whole number",
	}[t]
	if kind == "" {
		kind = "a " + t.String()
	}
	return fmt.Errorf("%q is not %s", value, kind)
}
