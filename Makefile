# Trellis: the two commands are `make run` and `make test`.
GO ?= go
BIN := bin/trellis
DATA ?= ./data
# ARGS are extra flags for `trellis serve`, e.g.
#   make run ARGS="--http-addr 127.0.0.1:7171 --nats-addr 127.0.0.1:4333"
ARGS ?=
# VERSION stamps a release version (default: server.Version in the code).
VERSION ?=
COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo -modified)
LDFLAGS := -X main.commit=$(COMMIT) $(if $(VERSION),-X github.com/trellis/trellis/server.Version=$(VERSION))

# chaos: the fault-injection matrix (chaos/; needs root). FAULTS is all,
# mixed, regressions (the runs that once found a defect, each with its own
# number, heal and runs) or a comma-separated list
# (kill-leader,isolate-leader,...); NUMBER
# decides what each fault picks (the same number repeats a run); DURATION
# is how long producers add after a fault starts, HEAL how long a fault
# lasts, RUNS the runs per fault; NODES the nats-server nodes (3 or 5),
# REPLICAS the streams' replicas (3, or 5 on 5 nodes).
FAULTS ?= all
NUMBER ?= 1
DURATION ?= 20s
HEAL ?= 12s
RUNS ?= 1
NODES ?= 3
REPLICAS ?= 3

.PHONY: run test build vet bench bench-river bench-cluster fmt ui chaos

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/trellis

## run: build and start `trellis serve` (embedded NATS JetStream in $(DATA)); ARGS="..." adds serve flags
run: build
	./$(BIN) serve --data $(DATA) $(ARGS)

## test: vet and every test (unit, integration on embedded NATS, godog features)
# The tests run with a temporary directory of their own, and fail if they
# leave anything in it: a machine running the suite again and again (a CI
# runner) must not fill its disk with what they built or wrote.
test:
	$(GO) vet ./...
	@tmp=$$(mktemp -d) || exit 1; trap 'rm -rf "$$tmp"; exit 130' INT TERM; \
	TMPDIR=$$tmp $(GO) test -count=1 -timeout 14m ./...; rc=$$?; \
	left=$$(ls -A $$tmp); rm -rf $$tmp; \
	if [ -n "$$left" ]; then echo "make test: the tests left files in their temporary directory: $$left"; [ $$rc -ne 0 ] || rc=1; fi; \
	exit $$rc

## ui: rebuild the dashboard (web/src -> web/dist, embedded in the binary) with Node and npm (exact versions in web/package.json); commit web/dist
ui:
	cd web && npm ci --no-audit --no-fund && npm run build

## chaos: break a real 3-node (NODES=5: 5-node) cluster on this machine (network namespaces; root) and print fault|runs|acked adds|lost|completed twice|executed twice|stuck|resume time|verify
chaos:
	$(GO) run ./chaos/cmd/chaos -faults $(FAULTS) -number $(NUMBER) -duration $(DURATION) -heal $(HEAL) -runs $(RUNS) -nodes $(NODES) -replicas $(REPLICAS)

bench: build
	./$(BIN) bench queue

# River (PostgreSQL) measured on this machine, to set beside `trellis bench
# workers` run right after it (needs the postgresql package).
bench-river:
	bash bench/river/run.sh

# Worker pools on a 3-node cluster of this machine (R3) beside one node (R1).
bench-cluster:
	bash bench/cluster/run.sh

fmt:
	gofmt -w $$(git ls-files '*.go')
