package main

import (
	"os"
	"testing"

	"github.com/trellis/trellis/internal/testdir"
)

// buildDir holds the binaries the process tests build (trellis, the
// order example); TestMain removes it when the tests end.
var buildDir string

func TestMain(m *testing.M) {
	os.Exit(testdir.Main(m, "trellis-cmd-test-", &buildDir))
}
