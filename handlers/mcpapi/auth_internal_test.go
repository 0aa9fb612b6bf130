package mcpapi

import (
	"testing"

	"github.com/trellis/trellis/auth"
)

// TestEveryToolHasAnOperation: each tool maps to an operation the policy
// knows.
func TestEveryToolHasAnOperation(t *testing.T) {
	for tool, op := range toolOps {
		if !auth.Known(op) {
			t.Errorf("tool %s maps to %q, which the policy does not know", tool, op)
		}
	}
}
