package handlers_test

import (
	"context"
	"testing"

	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/vinegraph"
)

// The VINE tests moved to package vinegraph; the audit tests still here
// use their service bundle and graph.

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
