package httpapi

import (
	"net/http"
	"testing"

	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/handlers"
)

// TestEveryRouteHasAnOperation: each route and the usual mounts map to an
// operation the policy knows, so no route is admin-only by accident or
// open by accident.
func TestEveryRouteHasAnOperation(t *testing.T) {
	h := New(&handlers.Service{}, Config{Mounts: map[string]http.Handler{"/mcp": http.NotFoundHandler(), "/metrics": http.NotFoundHandler()}})
	s := h.(*server)
	if len(s.patterns) < 30 {
		t.Fatalf("only %d patterns", len(s.patterns))
	}
	for _, p := range s.patterns {
		op, open := RouteOp(p)
		if open {
			if p != "GET /healthz" {
				t.Errorf("%s is served without a token", p)
			}
			continue
		}
		if !auth.Known(op) {
			t.Errorf("route %s maps to %q, which the policy does not know", p, op)
		}
	}
}
