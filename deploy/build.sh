#!/bin/sh
# The image's build steps (deploy/Dockerfile runs exactly this; CI runs it
# too through deploy/deploy_test.go, since no Docker daemon runs there).
# Usage: deploy/build.sh OUT   (from the repository root)
# cgo is on: the tree-sitter grammars are C.
set -eu
out=${1:?usage: deploy/build.sh OUT}
CGO_ENABLED=1 go build -ldflags "-s -w -X main.commit=${TRELLIS_COMMIT:-}" -o "$out" ./cmd/trellis
"$out" version
