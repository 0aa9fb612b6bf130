package features

import (
	"fmt"
	"os"
	"testing"
)

// buildDir holds the trellis binary the process scenarios build.
// TestMain removes it when the tests end, so repeated runs of the suite
// do not fill the machine's temporary directory.
var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "trellis-features-test-")
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
