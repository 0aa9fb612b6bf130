package codememory_test

import (
	"context"
	"testing"

	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers"
)

// setupMemory is agent memory's test service (package agentmemory), used
// here for searches that need no ingest.
func setupMemory(t *testing.T) (*handlers.Service, *eventstest.Bundle) {
	t.Helper()
	b := eventstest.Start(t)
	svc := handlers.NewService(b.Store, handlers.ServiceConfig{DataDir: t.TempDir()})
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	return svc, b
}
