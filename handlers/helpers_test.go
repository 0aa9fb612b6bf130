package handlers_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/vinegraph"
)

// The VINE, agent memory and code memory tests moved to their packages;
// the rebuild-at tests still here use these setups.

type vineBundle struct {
	*eventstest.Bundle
	svc *handlers.Service
	ws  string
}

func setupVine(t *testing.T) *vineBundle {
	t.Helper()
	b := &vineBundle{Bundle: eventstest.Start(t), ws: t.TempDir()}
	b.svc = handlers.NewService(b.Store, handlers.ServiceConfig{DataDir: t.TempDir(), Vine: vinegraph.Config{Roots: []string{b.ws}}})
	if err := b.svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.svc.Close() })
	return b
}

const chain = `vine 1.2.0
---
[root] Ship it (notstarted)
-> b
---
[b] Build (notstarted)
-> a
---
[a] Analyse (notstarted)
`

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
