package pipeline_test

import (
	"testing"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/internal/allocs"
	"github.com/focusgate/focusgate/internal/bufpool"
)

// budgets are the pipeline's hot paths' allocations per request, as
// TestAllocationBudgets last measured them with -update.
var budgets = allocs.Budgets{Path: "testdata/allocs.txt", Of: "the pipeline's", Pkg: "./pipeline", Test: "TestAllocationBudgets"}

// allocsRequests is how many requests each hot path is measured over.
const allocsRequests = 30

// TestAllocationBudgets holds each hot path (see hotPaths) to the
// allocations and bytes per request committed in testdata/allocs.txt, with
// 20% of room (package internal/allocs). After a change that allocates more
// on purpose (or less), write the new figures with
//
//	go test ./pipeline -run TestAllocationBudgets -update
//
// and say why in the commit. Under the race detector, which allocates for
// itself, each path runs but is not measured; make test also runs this test
// without it.
func TestAllocationBudgets(t *testing.T) {
	measured := map[string]allocs.PerRequest{}
	var names []string
	for _, hp := range hotPaths() {
		names = append(names, hp.name)
		p, req, want := hp.setup(t)
		reqs := make([]focusgate.Request, 3+allocsRequests)
		for i := range reqs {
			reqs[i] = req(uint64(i))
		}
		if allocs.Race {
			for _, r := range reqs[:3] {
				body, out := rewrite(p, r)
				if err := want.check(out); err != nil {
					t.Fatalf("%s: %v", hp.name, err)
				}
				giveBack(body, r)
			}
			continue
		}
		failed := make([]error, len(reqs))
		measured[hp.name] = allocs.Measure(3, allocsRequests, func(i int) {
			body, out := rewrite(p, reqs[i])
			failed[i] = want.check(out)
			giveBack(body, reqs[i])
		})
		for _, err := range failed {
			if err != nil {
				t.Fatalf("%s: %v", hp.name, err)
			}
		}
	}
	if allocs.Race {
		t.Log("the race detector allocates for itself: each hot path ran, the budgets are checked by the run without -race")
		return
	}
	budgets.Check(t, names, measured, *update)
}

// giveBack gives a rewritten body back to its pool, as the gateway does once
// the body has gone upstream.
func giveBack(body []byte, req focusgate.Request) {
	if len(body) > 0 && (len(req.Body) == 0 || &body[0] != &req.Body[0]) {
		bufpool.Put(body)
	}
}
