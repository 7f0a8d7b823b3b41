//go:build tools

// Package tool pins the helm version that `make test` lints and renders the
// chart with. It is a module of its own so that the gateway's go.mod stays
// free of Kubernetes dependencies.
package tool

import _ "helm.sh/helm/v3/cmd/helm"
