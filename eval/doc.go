// Package eval measures pruning strategies offline, on recorded agent steps:
// how much of each observation a strategy removes, whether the element the
// agent acted on survives, and what the retriever costs. It is what a user
// runs before deploying focusgate, to see both the saving and the risk on
// real traces.
package eval
