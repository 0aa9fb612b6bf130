package features

import (
	"os"
	"testing"

	"github.com/trellis/trellis/internal/testdir"
)

// buildDir holds the trellis binary the process scenarios build;
// TestMain removes it when the tests end.
var buildDir string

func TestMain(m *testing.M) {
	os.Exit(testdir.Main(m, "trellis-features-test-", &buildDir))
}
