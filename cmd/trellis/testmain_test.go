package main

import (
	"fmt"
	"os"
	"testing"
)

// buildDir holds the binaries the process tests build (trellis, the
// order example). TestMain removes it when the tests end: each build is
// tens of megabytes, and a machine that runs the suite again and again
// (a CI runner) would otherwise fill its disk.
var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "trellis-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "build dir:", err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, "remove build dir:", err)
		code = max(code, 1)
	}
	os.Exit(code)
}
