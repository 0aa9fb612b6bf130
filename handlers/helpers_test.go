package handlers_test

import (
	"testing"

	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/internal/servicetest"
)

// The VINE, agent memory and code memory tests moved to their packages;
// the rebuild-at tests still here use these setups.

type vineBundle struct {
	*eventstest.Bundle
	svc *handlers.Service
	ws  string
}

func setupVine(t *testing.T) *vineBundle {
	svc, b, ws := servicetest.StartVine(t)
	return &vineBundle{Bundle: b, svc: svc, ws: ws}
}
