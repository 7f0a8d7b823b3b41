package focusgate_test

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/focusgate/focusgate"

// coreImports lists the packages of this module that the code (not the
// tests) in dir imports, other than the root and internal/ libraries.
func coreImports(t *testing.T, dir string) []string {
	t.Helper()
	pkg, err := build.ImportDir(dir, 0)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	var core []string
	for _, p := range pkg.Imports {
		if p == module || !strings.HasPrefix(p, module+"/") || strings.HasPrefix(p, module+"/internal/") {
			continue
		}
		core = append(core, strings.TrimPrefix(p, module+"/"))
	}
	return core
}

// The gateway's HTTP layer and the dashboard speak only of the nouns and
// service interfaces of the root package: what a request became, the cache
// outcome, line ranges, the holdout's tickets and report. The pipeline,
// detection, pruning, the cache and the holdout are wired to them by
// cmd/focusgate, so that a change inside one of those never reaches the
// HTTP layer.
func TestHTTPLayerImportsOnlyTheRoot(t *testing.T) {
	for _, dir := range []string{"proxy", "ui"} {
		if core := coreImports(t, dir); len(core) > 0 {
			t.Errorf("%s imports %s: it may import only the root package and internal/", dir, strings.Join(core, ", "))
		}
	}
	// The check sees a core import where there is one.
	if core := coreImports(t, "pipeline"); !slices.Contains(core, "prune") {
		t.Errorf("pipeline's core imports %v: want prune among them", core)
	}
}
