//go:build race

package allocs

// Race says that the tests run under the race detector, which allocates for
// itself: budgets are checked by the run without it.
const Race = true
