# mcpkit: one binary, three MCP plugins on a shared core. `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/mcpkit/mcpkit/pkg/cli.Version=$(VERSION)
# Every module of the workspace (go.work).
PKGS := github.com/mcpkit/mcpkit/... github.com/mcpkit/mcpkit/test/... github.com/mcpkit/mcpkit/examples/hello-plugin/... github.com/mcpkit/mcpkit/examples/minimal/...
RUN_ARGS ?= serve --http 127.0.0.1:8080
FUZZTIME ?= 20s
BENCHTIME ?= 3000x
RUNS ?= 1
TEST_FLAGS ?= -race -timeout 15m

.PHONY: help build run test deps bench bench-resp bench-resp-sessions bench-store bench-agent bench-report conformance fuzz lint clean image image-test release

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build bin/mcpkit
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/mcpkit ./cmd/mcpkit

run: build ## serve the whole product on loopback (MCP at http://127.0.0.1:8080/mcp; prints where each part is)
	@scripts/run.sh $(RUN_ARGS) # not echoed: the map is the first thing run.sh prints on stdout

deps: ## install what the tests need (redis-server, postgresql, the conformance suite)
	scripts/install-deps.sh

test: deps build ## lint, then every test of every module with the race detector
	$(MAKE) lint
	MCPKIT_REQUIRE_POSTGRES=1 $(GO) test $(TEST_FLAGS) $(PKGS)

# bench leaves BenchmarkRespSidecar to bench-resp (it runs 100 rounds per
# batch size by design) and the BenchmarkStore* peers (SQLite, chromem-go,
# bleve) to bench-store (one run each, whatever BENCHTIME says); they fail
# while their targets are unmet. It also skips the document engine's
# workload benchmarks (one operation is a durable batch of 1,000 documents,
# or an agent's whole ingest: BENCHTIME=3000x would write millions), which
# compare builds of the engine by hand: go test -bench
# 'PutMany|Queries|TextIngest|HNSWIngest|AgentIngest' -benchtime 20x ./pkg/docstore/
# (BenchmarkHybridSearchPostgres too: bench-store's BenchmarkStorePostgresHybrid
# measures the same comparison at 100,000 documents)
# (and BenchmarkWriteNotes, the agent's ingest through the store's write
# tool, in ./plugins/store/)
bench: build ## benchmarks against their peers, with ratios (bench-resp, bench-store and bench-agent apart)
	$(GO) test -run '^$$' -bench . -skip '^(BenchmarkRespSidecar|BenchmarkRespSessions|BenchmarkStore.*|BenchmarkAgent|BenchmarkPutMany|BenchmarkQueries|BenchmarkTextIngest|BenchmarkHNSWIngest|BenchmarkAgentIngest|BenchmarkWriteNotes|BenchmarkHybridSearchPostgres)$$' -benchtime $(BENCHTIME) $(PKGS)

# bench-resp runs once; RUNS=5 runs it five times and takes the verdict as
# the medians (scripts/bench-resp-median.sh), which is how its targets are judged.
bench-resp: build ## the RESP sidecar over MCP stdio against direct RESP and redis-benchmark, batches 1/16/128 (RUNS=5: the median of five runs)
ifeq ($(RUNS),1)
	cd test && $(GO) test -run '^$$' -bench '^BenchmarkRespSidecar$$' -benchtime 100x -timeout 10m .
else
	GO=$(GO) scripts/bench-resp-median.sh $(RUNS)
endif

bench-resp-sessions: build ## mcpkit resp under 8 concurrent sessions, on one processor (forced) and on the default number
	cd test && $(GO) test -run '^$$' -bench '^BenchmarkRespSessions$$' -benchtime 1x -timeout 20m .

# bench-store installs what its peers need first (scripts/install-deps.sh
# --bench: the tests' dependencies, PostgreSQL among them, and hnswlib with
# g++ for the HNSW build's C++ peer).
bench-store: ## the document store against its peers: SQLite (ingest, get, indexed queries, reopen), chromem-go (vectors), coder/hnsw and hnswlib (HNSW build), bleve (text), bare pgx on PostgreSQL
	scripts/install-deps.sh --bench
	cd test && MCPKIT_REQUIRE_POSTGRES=1 $(GO) test -run '^$$' -bench '^BenchmarkStore' -benchtime 1x -timeout 30m .

# bench-agent installs its peers from npm (pinned versions, into a
# temporary directory) and runs its own rounds: one run of the benchmark,
# with -v so that its tables are printed whole (go test keeps ten lines of
# a passing benchmark's log otherwise).
bench-agent: build ## an agent's jobs (notes stored and searched, Redis SET/GET, batches of 128) through mcpkit and through server-memory and two Redis MCP servers from npm: time and result bytes
	cd test && $(GO) test -v -run '^$$' -bench '^BenchmarkAgent$$' -benchtime 1x -timeout 20m .

# bench-report runs bench, bench-resp, bench-store and bench-agent with `go test -v` output
# (test/cmd/benchreport); a target that fails on a missed target is
# reported, not fatal. BENCH_PUBLISH=1 also rewrites docs/benchmarks.md.
bench-report: ## every benchmark into bench-report/report.md with PNG plots (BENCH_PUBLISH=1: also docs/benchmarks.md)
	cd test && $(GO) run ./cmd/benchreport -C .. -out bench-report $(if $(BENCH_PUBLISH),-publish docs) bench bench-resp bench-store bench-agent

conformance: build ## every server scenario of the MCP conformance suite, both eras, against mcpkit and the go-sdk's example server side by side
	cd test && MCPKIT_CONFORMANCE_PEER=1 $(GO) test -count=1 -run '^TestConformance$$' -v -timeout 20m .

fuzz: ## run every fuzz target for FUZZTIME each
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

lint: ## gofmt, go vet, and the root module building outside the workspace; fails on any finding
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	GOWORK=off $(GO) build -o /dev/null ./cmd/mcpkit # the root module builds alone (go install)

image: ## the container image from deploy/Containerfile with podman or buildah (scripts/image.sh; IMAGE=name)
	VERSION=$(VERSION) scripts/image.sh $(IMAGE)

image-test: ## build the image and run its entrypoint under chroot (TestImage; as root; installs podman)
	MCPKIT_IMAGE_TEST=1 scripts/install-deps.sh
	cd test && MCPKIT_IMAGE_TEST=1 $(GO) test -count=1 -run '^TestImage$$' -v -timeout 20m .

release: ## static binaries for linux, darwin and windows with SHA256SUMS in dist/ (scripts/release.sh)
	VERSION=$(VERSION) scripts/release.sh

clean: ## remove build and test outputs
	rm -rf bin
	$(GO) clean -testcache
