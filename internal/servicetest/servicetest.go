package servicetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/vinegraph"
)

// Start starts a log and a service on it (its data in a temporary
// directory), closed at the test's end.
func Start(t testing.TB) (*handlers.Service, *eventstest.Bundle) {
	t.Helper()
	b := eventstest.Start(t)
	return StartOn(t, b, handlers.ServiceConfig{DataDir: t.TempDir()}), b
}

// StartVine starts a log and a service whose one VINE workspace root is
// the returned temporary directory.
func StartVine(t testing.TB) (*handlers.Service, *eventstest.Bundle, string) {
	t.Helper()
	b, ws := eventstest.Start(t), t.TempDir()
	svc := StartOn(t, b, handlers.ServiceConfig{DataDir: t.TempDir(), Vine: vinegraph.Config{Roots: []string{ws}}})
	return svc, b, ws
}

// StartOn starts a service with cfg on b's log, closed at the test's end.
func StartOn(t testing.TB, b *eventstest.Bundle, cfg handlers.ServiceConfig) *handlers.Service {
	t.Helper()
	svc := handlers.NewService(b.Store, cfg)
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	return svc
}

// RunTask adds a task to queue q, claims it as worker w and completes it,
// and returns its three chained events.
func RunTask(t testing.TB, svc *handlers.Service, q, w string) []events.Recorded {
	t.Helper()
	ctx := context.Background()
	task, err := svc.Add(ctx, trellis.AddTaskRequest{Queue: q, Objective: "objective of " + w})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Next(ctx, trellis.NextRequest{Queue: q, Worker: w}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: w, WhatWasDone: "done by " + w}); err != nil {
		t.Fatal(err)
	}
	recs, err := audit.AggregateEvents(ctx, svc.Store(), task.TaskID)
	if err != nil || len(recs) != 3 {
		t.Fatalf("audit %s: %d events, %v", task.TaskID, len(recs), err)
	}
	return recs
}

// WriteFiles writes files (path relative to root -> content) under root.
func WriteFiles(t testing.TB, root string, files map[string]string) {
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

// Chain is a VINE graph of three nodes in a line: root depends on b, b on a.
const Chain = `vine 1.2.0
---
[root] Ship it (notstarted)
-> b
---
[b] Build (notstarted)
-> a
---
[a] Analyse (notstarted)
`
