package audit_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers"
)

// setupMemory starts a log and a service on it, closed at the test's end.
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

// writeFiles writes files (path relative to root -> content) under root.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
