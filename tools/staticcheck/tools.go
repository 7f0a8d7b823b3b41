//go:build tools

// Package staticcheck pins the staticcheck version that `make test` lints the
// code with. It is a module of its own so that the gateway's go.mod stays
// free of the linter's dependencies.
package staticcheck

import _ "honnef.co/go/tools/cmd/staticcheck"
