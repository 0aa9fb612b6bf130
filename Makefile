# Trellis: the two commands are `make run` and `make test`.
GO ?= go
BIN := bin/trellis
DATA ?= ./data

.PHONY: run test build vet bench fmt

build:
	$(GO) build -o $(BIN) ./cmd/trellis

## run: build and start `trellis serve` (embedded NATS JetStream in $(DATA))
run: build
	./$(BIN) serve --data $(DATA)

## test: vet and every test (unit, integration on embedded NATS, godog features)
test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 14m ./...

bench: build
	./$(BIN) bench queue

fmt:
	gofmt -w $$(git ls-files '*.go')
