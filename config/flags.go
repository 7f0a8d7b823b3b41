package config

import (
	"encoding"
	"flag"
	"fmt"
	"io"
	"reflect"
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
}

// Settings lists every setting: the gateway's in declaration order, then
// those the providers declare.
func Settings() []Setting {
	fs := fields()
	out := make([]Setting, 0, len(fs))
	for _, f := range fs {
		out = append(out, setting(f.Tag.Get("env"), f.Tag.Get("envDefault"), f.Tag.Get("help")))
	}
	for _, s := range ProviderSettings() {
		out = append(out, setting(s.Name, s.Default, s.Help))
	}
	return out
}

func setting(name, def, help string) Setting {
	return Setting{Flag: strings.ToLower(strings.ReplaceAll(name, "_", "-")), Env: Prefix + name, Default: def, Help: help}
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

// RegisterFlags adds one flag per setting to fs, bound to c, so that a flag
// given on the command line overrides the environment. Call it after Load.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	v := reflect.ValueOf(c).Elem()
	for _, f := range fields() {
		s := setting(f.Tag.Get("env"), "", f.Tag.Get("help"))
		fs.Var(fieldValue{v.FieldByIndex(f.Index), s.Env}, s.Flag, s.Help)
	}
	for _, ps := range ProviderSettings() {
		s := setting(ps.Name, "", ps.Help)
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

// PrintSettings writes the flags of fs, then every setting with its
// environment variable and default: the body of each command's --help.
func PrintSettings(w io.Writer, fs *flag.FlagSet) {
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
			def := ""
			if f.DefValue != "" && f.DefValue != "false" {
				def = fmt.Sprintf(" (default %q)", f.DefValue)
			}
			fmt.Fprintf(w, "  --%s\n        %s%s\n", f.Name, f.Usage, def)
		}
	}
	fmt.Fprintln(w, "\nSettings (flag, environment variable, default):")
	for _, s := range Settings() {
		def := s.Default
		if def == "" {
			def = "empty"
		} else {
			def = strconv.Quote(def)
		}
		fmt.Fprintf(w, "  --%s, %s (default %s)\n        %s\n", s.Flag, s.Env, def, s.Help)
	}
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
			return err
		}
		f.v.SetBool(b)
	case time.Duration:
		d, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		f.v.SetInt(int64(d))
	case float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		f.v.SetFloat(x)
	case int, int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return err
		}
		f.v.SetInt(n)
	default:
		return fmt.Errorf("unsupported setting type %s", f.v.Type())
	}
	return nil
}
