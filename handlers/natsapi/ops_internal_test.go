package natsapi

import (
	"testing"

	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/handlers"
)

// TestEveryOperationIsNamedByThePolicy: each operation the API serves is
// one the authorization policy names, so a new operation cannot fall
// silently to the admin-only default.
func TestEveryOperationIsNamedByThePolicy(t *testing.T) {
	ops := operations(nil, &handlers.Service{}, ServeConfig{})
	if len(ops) < 40 {
		t.Fatalf("only %d operations", len(ops))
	}
	for op := range ops {
		if !auth.Known(op) {
			t.Errorf("operation %s is not named by the policy", op)
		}
	}
	if !auth.Known(OpQueueExport) {
		t.Errorf("operation %s is not named by the policy", OpQueueExport)
	}
}
