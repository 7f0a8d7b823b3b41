// Command skipcheck reads the output of `go test -json` on stdin, prints it
// as `go test` would without -json (each package's result, and the output of
// the tests that failed), and fails when a test was skipped that was
// expected to run: make test runs every tier (Redis, Chromium, the npm agent
// tools, the e2e build tag), so a skip there means a check that did not
// happen. Skips that are part of a test's design are listed in the allow
// file, each with its reason.
//
// Usage: go test -json ./... | go run ./tools/skipcheck -allow scripts/allowed-skips.txt
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

func main() {
	allowFile := flag.String("allow", "", "file of allowed skips: lines `REGEXP # reason`, REGEXP matched against import/path.TestName/subtest")
	flag.Parse()
	var allow []allowed
	if *allowFile != "" {
		data, err := os.ReadFile(*allowFile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "skipcheck: %v\n", err)
			os.Exit(2)
		}
		if allow, err = parseAllow(string(data)); err != nil {
			fmt.Fprintf(os.Stderr, "skipcheck: %s: %v\n", *allowFile, err)
			os.Exit(2)
		}
	}
	if err := check(os.Stdin, os.Stdout, allow); err != nil {
		fmt.Fprintf(os.Stderr, "skipcheck: %v\n", err)
		os.Exit(1)
	}
}

// allowed is one line of the allow file.
type allowed struct {
	re     *regexp.Regexp
	reason string
}

func parseAllow(data string) ([]allowed, error) {
	var out []allowed
	var errs []error
	n := 0
	for line := range strings.Lines(data) {
		n++
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pattern, reason, _ := strings.Cut(line, "#")
		pattern, reason = strings.TrimSpace(pattern), strings.TrimSpace(reason)
		if reason == "" {
			errs = append(errs, fmt.Errorf("line %d: an allowed skip needs its reason after #", n))
			continue
		}
		re, err := regexp.Compile("^(?:" + pattern + ")$")
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", n, err))
			continue
		}
		out = append(out, allowed{re, reason})
	}
	return out, errors.Join(errs...)
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output and build-fail
	Test       string
	Output     string
}

// check copies the results of in to out and returns an error naming every
// skipped test that no allow pattern matches, and the failures.
func check(in io.Reader, out io.Writer, allow []allowed) error {
	type key struct{ pkg, test string }
	outputs := map[key]*strings.Builder{}
	var unexpected []string
	failed := map[string]bool{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			// Not test2json (go vet's or the linker's own words): as it came.
			fmt.Fprintln(out, sc.Text())
			continue
		}
		k := key{e.Package, e.Test}
		switch {
		case e.Action == "build-output":
			io.WriteString(out, e.Output)
		case e.Action == "build-fail":
			failed[e.ImportPath] = true
		case e.Test == "":
			// The package's own lines: ok, FAIL, panics outside a test
			// (not the test binary's PASS, which go test shows with -v
			// only).
			if e.Action == "output" && e.Output != "PASS\n" {
				io.WriteString(out, e.Output)
			}
			if e.Action == "fail" {
				failed[e.Package] = true
				// Tests still running when the package failed (a
				// panic, the timeout) get no result of their own:
				// their output says what happened.
				for k, b := range outputs {
					if k.pkg == e.Package {
						io.WriteString(out, b.String())
						delete(outputs, k)
					}
				}
			}
		case e.Action == "output":
			b := outputs[k]
			if b == nil {
				b = &strings.Builder{}
				outputs[k] = b
			}
			b.WriteString(e.Output)
		case e.Action == "fail":
			if b := outputs[k]; b != nil {
				io.WriteString(out, b.String())
			}
			delete(outputs, k)
		case e.Action == "skip":
			name := e.Package + "." + e.Test
			if !isAllowed(name, allow) {
				reason := ""
				if b := outputs[k]; b != nil {
					reason = strings.TrimSpace(b.String())
				}
				unexpected = append(unexpected, name+"\n"+indent(reason))
			}
			delete(outputs, k)
		case e.Action == "pass":
			delete(outputs, k)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	var errs []error
	if len(unexpected) > 0 {
		errs = append(errs, fmt.Errorf("%d tests were skipped that make test expects to run (install what they need, or list an intended skip with its reason in the allow file):\n%s",
			len(unexpected), strings.Join(unexpected, "\n")))
	}
	if len(failed) > 0 {
		errs = append(errs, fmt.Errorf("%d packages failed", len(failed)))
	}
	return errors.Join(errs...)
}

func isAllowed(name string, allow []allowed) bool {
	for _, a := range allow {
		if a.re.MatchString(name) {
			return true
		}
	}
	return false
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
