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

.PHONY: run test build vet bench fmt ui

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/trellis

## run: build and start `trellis serve` (embedded NATS JetStream in $(DATA)); ARGS="..." adds serve flags
run: build
	./$(BIN) serve --data $(DATA) $(ARGS)

## test: vet and every test (unit, integration on embedded NATS, godog features)
test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 14m ./...

## ui: rebuild the dashboard (web/src -> web/dist, embedded in the binary) with Node and npm (exact versions in web/package.json); commit web/dist
ui:
	cd web && npm ci --no-audit --no-fund && npm run build

bench: build
	./$(BIN) bench queue

fmt:
	gofmt -w $$(git ls-files '*.go')
