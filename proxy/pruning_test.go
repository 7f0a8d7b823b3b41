package proxy_test

import (
	"os"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/internal/retrievertest"
	"github.com/focusgate/focusgate/prune"
)

// The gateway's tests that need a real pipeline behind it (metrics, auth,
// holdout, the deadline, rescue) share this scripted retriever; what the
// pipeline does to a body is specified in package pipeline.

// The scripted retriever model the tests ask (see internal/retrievertest).
type retriever = retrievertest.Retriever

var (
	newRetriever  = retrievertest.New
	numberedLines = retrievertest.NumberedLines
	keep          = retrievertest.Keep
)

// pruningGateway is focusgate with real detection, pruning and an in-process
// cache, between a recording upstream and a scripted retriever.
func pruningGateway(t *testing.T, rt *retriever, configure ...func(*gatewayOptions)) *gateway {
	t.Helper()
	pruner := prune.New(prune.Config{RetrieverModel: "gpt-4.1-mini", MinTokens: 1000, UseHistory: true},
		mustRetriever(prune.RetrieverConfig{Speaks: focusgate.APIChat, BaseURL: rt.URL, Model: "gpt-4.1-mini", Timeout: time.Minute}),
		cache.New(cache.NewMemory(1<<20, time.Hour), nil))
	return newGateway(t, nil, append([]func(*gatewayOptions){func(o *gatewayOptions) {
		o.Pruner, o.Mode, o.Variant, o.RetrieverModel = pruner, focusgate.ModeRemove, focusgate.VariantLine, "gpt-4.1-mini"
	}}, configure...)...)
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const laptopRequest = "../testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json"

// mustRetriever is the retriever client cfg describes.
func mustRetriever(cfg prune.RetrieverConfig) prune.Retriever {
	r, err := prune.NewRetriever(cfg)
	if err != nil {
		panic(err)
	}
	return r
}
