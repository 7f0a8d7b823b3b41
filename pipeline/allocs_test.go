package pipeline_test

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/internal/bufpool"
)

// allocsFile holds what each hot path allocates per request, as
// TestAllocationBudgets last measured it with -update.
const allocsFile = "testdata/allocs.txt"

// allocsRoom is how much more than its baseline a hot path may allocate,
// in allocations and in bytes, before TestAllocationBudgets fails.
const allocsRoom = 1.2

// allocsGrace is room added to every budget for what the process's other
// goroutines allocate while a path is measured (the runtime counts the whole
// process): a few allocations over a run, which the 20% of a path that
// allocates next to nothing, such as a passthrough, would not cover.
var allocsGrace = perRequest{allocs: 1, bytes: 256}

// allocsRequests is how many requests each hot path is measured over.
const allocsRequests = 30

// perRequest is what a hot path allocates per request.
type perRequest struct {
	allocs, bytes float64
}

// TestAllocationBudgets holds each hot path (see hotPaths) to the
// allocations and bytes per request committed in testdata/allocs.txt, with
// 20% of room: a change that makes the gateway's common requests allocate
// more fails make test. Allocations are counted by the runtime, so the check
// holds on a loaded machine, where a timed one could not; what they cost in
// time is in BENCHMARKS.md. After a change that allocates more on purpose (or
// less), write the new figures with
//
//	go test ./pipeline -run TestAllocationBudgets -update
//
// and say why in the commit. Under the race detector, which allocates for
// itself, each path runs but is not measured; make test also runs this test
// without it.
func TestAllocationBudgets(t *testing.T) {
	baseline := readBudgets(t)
	measured := map[string]perRequest{}
	for _, hp := range hotPaths() {
		p, req, want := hp.setup(t)
		reqs := make([]focusgate.Request, 3+allocsRequests)
		for i := range reqs {
			reqs[i] = req(uint64(i))
		}
		for _, r := range reqs[:3] { // warm: pools, lazily built tables
			body, out := rewrite(p, r)
			if want.check(out) != nil {
				t.Fatalf("%s: %v", hp.name, want.check(out))
			}
			giveBack(body, r)
		}
		if raceEnabled {
			continue
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for _, r := range reqs[3:] {
			body, _ := rewrite(p, r)
			giveBack(body, r)
		}
		runtime.ReadMemStats(&after)
		got := perRequest{
			allocs: float64(after.Mallocs-before.Mallocs) / allocsRequests,
			bytes:  float64(after.TotalAlloc-before.TotalAlloc) / allocsRequests,
		}
		measured[hp.name] = got
		base, ok := baseline[hp.name]
		switch {
		case *update:
		case !ok:
			t.Errorf("%s: no baseline in %s (run with -update)", hp.name, allocsFile)
		case got.allocs > base.allocs*allocsRoom+allocsGrace.allocs || got.bytes > base.bytes*allocsRoom+allocsGrace.bytes:
			t.Errorf("%s: %.1f allocations and %.0f bytes per request, more than 20%% (and a grace of %.0f and %.0f) over the baseline's %.1f and %.0f (%s)",
				hp.name, got.allocs, got.bytes, allocsGrace.allocs, allocsGrace.bytes, base.allocs, base.bytes, allocsFile)
		default:
			t.Logf("%s: %.1f allocations, %.0f bytes per request (baseline %.1f, %.0f)", hp.name, got.allocs, got.bytes, base.allocs, base.bytes)
		}
	}
	if raceEnabled {
		t.Log("the race detector allocates for itself: each hot path ran, the budgets are checked by the run without -race")
		return
	}
	if *update {
		writeBudgets(t, measured)
	}
}

// giveBack gives a rewritten body back to its pool, as the gateway does once
// the body has gone upstream.
func giveBack(body []byte, req focusgate.Request) {
	if len(body) > 0 && (len(req.Body) == 0 || &body[0] != &req.Body[0]) {
		bufpool.Put(body)
	}
}

// readBudgets reads allocsFile: a line per hot path, its name, allocations
// and bytes per request; # starts a comment.
func readBudgets(t *testing.T) map[string]perRequest {
	t.Helper()
	budgets := map[string]perRequest{}
	f, err := os.Open(allocsFile)
	if os.IsNotExist(err) && *update {
		return budgets
	}
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
		var b perRequest
		if _, err := fmt.Sscanf(line, "%s %g %g", &name, &b.allocs, &b.bytes); err != nil {
			t.Fatalf("%s: %q: %v", allocsFile, line, err)
		}
		budgets[name] = b
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return budgets
}

func writeBudgets(t *testing.T, budgets map[string]perRequest) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# Allocations and bytes per request of the pipeline's hot paths, as TestAllocationBudgets measured them\n")
	b.WriteString("# (go test ./pipeline -run TestAllocationBudgets -update, without -race). make test fails when a path\n")
	b.WriteString("# allocates more than 20% (plus one allocation and 256 bytes) over its line, in either figure.\n")
	for _, hp := range hotPaths() {
		got := budgets[hp.name]
		fmt.Fprintf(&b, "%-28s %8.1f %10.0f\n", hp.name, got.allocs, got.bytes)
	}
	if err := os.WriteFile(allocsFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
