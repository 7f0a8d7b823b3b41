GO      ?= go
BIN     ?= bin/focusgate
PKGS    := ./...

.PHONY: run build test vet fmt-check

## run: start the gateway with working defaults (in-process cache, OpenAI upstream)
run:
	$(GO) run ./cmd/focusgate serve

## build: a static binary in bin/
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o $(BIN) ./cmd/focusgate

## test: formatting, vet, and every test (race detector on) against a throwaway redis-server
test: fmt-check vet
	scripts/install-redis.sh
	scripts/install-chromium.sh
	scripts/with-redis.sh $(GO) test -race -count=1 $(PKGS)

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path '*/testdata/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

.PHONY: bench

## bench: Go benchmarks of the hot paths, then the load benchmark (LOADBENCH_FLAGS, e.g. -duration 1s)
bench:
	scripts/install-redis.sh
	scripts/with-redis.sh $(GO) test -run '^$$' -bench . -benchmem ./detect ./prune ./cache ./proxy ./ui
	$(GO) run ./internal/loadbench $(LOADBENCH_FLAGS)
