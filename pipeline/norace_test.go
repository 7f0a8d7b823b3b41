//go:build !race

package pipeline_test

// raceEnabled says that the tests run under the race detector, which
// allocates for itself: the allocation budgets are checked without it.
const raceEnabled = false
