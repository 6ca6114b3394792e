# specgate — run `make help` for the targets.
GO       ?= go
BIN      := bin/specgate
PKGS     := ./...
LISTEN   ?= 127.0.0.1:8080
# The version specgate reports; without git, the binary falls back to what
# the Go toolchain recorded in it (module version or VCS revision).
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null)
LDFLAGS  := -s -w -X main.version=$(VERSION)

.PHONY: help build test race sweep bench soak fuzz lint run tidy-check release

help: ## show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# Built as the release and the image are: static and with module paths
# trimmed (150 KB smaller than a cgo build with full paths).
build: ## build bin/specgate
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/specgate

test: lint ## the test suite: vet, gofmt, every test under -race, then the large-spec tests without it
	@./scripts/skipped.sh
	$(GO) test -race -count=1 -timeout 30m $(PKGS)
	$(GO) test -count=1 -timeout 30m ./pkg/spec/ ./pkg/search/ ./pkg/invoke/ ./pkg/mock/

# The sweep runs Prism (node), so it runs in a network namespace of its own
# with only loopback up; the test refuses to run anywhere else.
sweep: build ## the corpus sweep: sampled operations of every ../shared/specs spec through specgate against Prism (needs: cd test/sweep && npm ci --ignore-scripts)
	$(GO) test -c -o bin/sweep.test ./test/sweep
	cd test/sweep && SPECGATE_SWEEP=1 SPECGATE_BIN=$(CURDIR)/$(BIN) SPECGATE_SWEEP_REPORT=$(CURDIR)/bin/sweep.md \
	  unshare -rn sh -c 'ip link set lo up && exec ../../bin/sweep.test -test.run TestSweep -test.v -test.timeout 15m'

race: test ## alias of test (the suite always runs with -race)

bench: build ## benchmarks for the targets in docs/performance.md
	./scripts/bench.sh

soak: ## the team setup under load: 3 replicas, 30 agents, per store (memory, Redis, Redis Cluster), then two principals with one flooding; SOAK=1m each
	SPECGATE_SOAK_DURATION=$${SOAK:-1m} $(GO) test -run '^$$' -bench Soak -benchtime=1x -timeout 30m ./cmd/specgate/ 2>&1 | tee soak.out

fuzz: ## run each fuzz test for a short while (FUZZTIME=30s)
	./scripts/fuzz.sh $${FUZZTIME:-20s}

lint: ## gofmt and go vet must be clean; staticcheck too where it is installed
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	@if command -v staticcheck >/dev/null 2>&1; then echo staticcheck $(PKGS); staticcheck $(PKGS); \
	  elif [ -x "$$($(GO) env GOPATH)/bin/staticcheck" ]; then echo staticcheck $(PKGS); "$$($(GO) env GOPATH)/bin/staticcheck" $(PKGS); fi

tidy-check: ## go mod tidy leaves no diff
	$(GO) mod tidy && git diff --exit-code go.mod go.sum

release: ## static binaries for linux, darwin (amd64, arm64) and windows amd64 in dist/, archived with LICENSE and README, and SHA256SUMS
	VERSION=$(VERSION) GO=$(GO) ./scripts/release.sh

run: build ## serve the bundled Petstore, answered by its mock (no network needed), over streamable HTTP
	@echo 'Try: search "find pet by id", then invoke petstore.getPetById with {"petId": 1}.'
	@echo 'The Petstore is answered by a mock allowing 5 requests per 10s: call it often and see'
	@echo 'specgate pace you (rate_limit_status). Delete the mock: line of specs/demo.yaml for the real API.'
	$(BIN) serve --http $(LISTEN) --config specs/demo.yaml
