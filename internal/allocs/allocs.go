// Package allocs holds a package's hot paths to the allocations per request
// committed in a budgets file, so that a change that makes the gateway's
// common requests allocate more fails make test. Allocations are counted by
// the runtime, so the check holds on a loaded machine, where a timed one
// could not; what they cost in time is in BENCHMARKS.md.
package allocs

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

// Room is how much more than its budget a hot path may allocate, in
// allocations and in bytes, before Check fails.
const Room = 1.2

// Grace is room added to every budget for what the process's other
// goroutines allocate while a path is measured (the runtime counts the whole
// process): a few allocations over a run, which the 20% of a path that
// allocates next to nothing, such as a passthrough, would not cover.
var Grace = PerRequest{Allocs: 1, Bytes: 256}

// PerRequest is what a hot path allocates per request.
type PerRequest struct {
	Allocs, Bytes float64
}

// Measure calls do for requests 0 to warm+n-1 and returns what the process
// allocated per request over the last n; the first warm fill pools and
// lazily built tables. It runs them on one P: sync.Pool keeps a pool per P,
// and a run whose goroutine moved to another P would count that P's pools
// being filled.
func Measure(warm, n int, do func(i int)) PerRequest {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for i := range warm {
		do(i)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		do(warm + i)
	}
	runtime.ReadMemStats(&after)
	return PerRequest{
		Allocs: float64(after.Mallocs-before.Mallocs) / float64(n),
		Bytes:  float64(after.TotalAlloc-before.TotalAlloc) / float64(n),
	}
}

// Budgets is a budgets file: a line per hot path, its name, allocations and
// bytes per request; # starts a comment.
type Budgets struct {
	Path string // relative to the test's package, as "testdata/allocs.txt"
	Of   string // whose hot paths, for the file's header: "the pipeline's"
	Pkg  string // the package, for the command that rewrites the file: "./pipeline"
	Test string // the test that checks them
}

// Check fails t for every path of measured over its budget, or without
// one. With update, it writes measured as the new budgets instead, in the
// order of names.
func (b Budgets) Check(t testing.TB, names []string, measured map[string]PerRequest, update bool) {
	t.Helper()
	if update {
		b.write(t, names, measured)
		return
	}
	budgets := b.read(t)
	for _, name := range names {
		got, ok := measured[name]
		if !ok {
			continue
		}
		base, ok := budgets[name]
		switch {
		case !ok:
			t.Errorf("%s: no budget in %s (run go test %s -run %s -update)", name, b.Path, b.Pkg, b.Test)
		case got.Allocs > base.Allocs*Room+Grace.Allocs || got.Bytes > base.Bytes*Room+Grace.Bytes:
			t.Errorf("%s: %.1f allocations and %.0f bytes per request, more than 20%% (and a grace of %.0f and %.0f) over the budget's %.1f and %.0f (%s)",
				name, got.Allocs, got.Bytes, Grace.Allocs, Grace.Bytes, base.Allocs, base.Bytes, b.Path)
		default:
			t.Logf("%s: %.1f allocations, %.0f bytes per request (budget %.1f, %.0f)", name, got.Allocs, got.Bytes, base.Allocs, base.Bytes)
		}
	}
}

func (b Budgets) read(t testing.TB) map[string]PerRequest {
	t.Helper()
	budgets := map[string]PerRequest{}
	f, err := os.Open(b.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var name string
		var p PerRequest
		if _, err := fmt.Sscanf(line, "%s %g %g", &name, &p.Allocs, &p.Bytes); err != nil {
			t.Fatalf("%s: %q: %v", b.Path, line, err)
		}
		budgets[name] = p
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return budgets
}

func (b Budgets) write(t testing.TB, names []string, measured map[string]PerRequest) {
	t.Helper()
	var w strings.Builder
	fmt.Fprintf(&w, "# Allocations and bytes per request of %s hot paths, as %s measured them\n", b.Of, b.Test)
	fmt.Fprintf(&w, "# (go test %s -run %s -update, without -race). make test fails when a path\n", b.Pkg, b.Test)
	w.WriteString("# allocates more than 20% (plus one allocation and 256 bytes) over its line, in either figure.\n")
	for _, name := range names {
		got := measured[name]
		fmt.Fprintf(&w, "%-28s %8.1f %10.0f\n", name, got.Allocs, got.Bytes)
	}
	if err := os.WriteFile(b.Path, []byte(w.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
