package workers_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/vinegraph"
	"github.com/trellis/trellis/workers"
)

// expandsFirst is a real VINE service whose first expansion of each
// reference is preceded by the same expansion through another service
// (another agent on another server winning the race).
type expandsFirst struct {
	trellis.VineService
	other trellis.VineService
	mu    sync.Mutex
	done  map[string]bool
	err   error
}

func (s *expandsFirst) VineExpand(ctx context.Context, req trellis.VineExpandRequest) (*trellis.VineWriteResult, error) {
	s.mu.Lock()
	if !s.done[req.RefID] {
		s.done[req.RefID] = true
		if _, err := s.other.VineExpand(ctx, req); err != nil {
			s.err = errors.Join(s.err, err)
		}
	}
	s.mu.Unlock()
	return s.VineService.VineExpand(ctx, req)
}

func vineServices(t *testing.T) (a, b *handlers.Service, ws string, store *events.Store) {
	t.Helper()
	nb := eventstest.Start(t)
	ws = t.TempDir()
	a = handlers.NewService(nb.Store, handlers.ServiceConfig{DataDir: t.TempDir(), Vine: vinegraph.Config{Roots: []string{ws}}})
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	b = handlers.NewService(nb.Store, handlers.ServiceConfig{DataDir: t.TempDir(), Vine: vinegraph.Config{Roots: []string{ws}}})
	return a, b, ws, nb.Store
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestVineAgentLosesExpansionRace: an agent whose expansion another agent
// did first carries on (the reference is no longer one) and completes the
// graph, instead of ending its run with an error.
func TestVineAgentLosesExpansionRace(t *testing.T) {
	t.Parallel()
	a, b, ws, _ := vineServices(t)
	f := filepath.Join(ws, "plan.vine")
	writeFile(t, f, "vine 1.2.0\n---\n[root] Ship (notstarted)\n-> lib\n-> app\n---\nref [lib] Library (./lib.vine)\n---\n[app] App (notstarted)\n")
	writeFile(t, filepath.Join(ws, "lib.vine"), "vine 1.2.0\n---\n[top] Library (notstarted)\n-> core\n---\n[core] Core (notstarted)\n")
	svc := &expandsFirst{VineService: a, other: b, done: map[string]bool{}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := (&workers.VineAgent{Service: svc, File: f, Agent: "agent-1"}).Run(ctx)
	if err != nil {
		t.Fatalf("run: %v (report %+v)", err, rep)
	}
	if svc.err != nil {
		t.Fatalf("the other agent's expansion failed: %v", svc.err)
	}
	if !svc.done["lib"] || len(rep.Expanded) != 0 || rep.Progress.RootStatus != "complete" {
		t.Fatalf("report %+v; want the root complete, lib expanded by the other agent only", rep)
	}
	if len(rep.Claimed) != 4 { // app, lib/core, lib, root
		t.Fatalf("claimed %v; want 4 tasks", rep.Claimed)
	}
}

// TestVineAgentStalls: a run on a graph no agent can move forward ends
// with a stalled error (trellis.CodeStalled, errors.Is ErrStalled) naming
// the blocked task and the reference whose child file is missing.
func TestVineAgentStalls(t *testing.T) {
	t.Parallel()
	a, _, ws, _ := vineServices(t)
	f := filepath.Join(ws, "stuck.vine")
	writeFile(t, f, "vine 1.2.0\n---\n[root] Ship (notstarted)\n-> lint\n-> lib\n-> a\n---\n[lint] Lint (blocked)\n> linter crashed\n---\nref [lib] Library (./gone.vine)\n---\n[a] A (notstarted)\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := (&workers.VineAgent{Service: a, File: f, Agent: "agent-1"}).Run(ctx)
	if !errors.Is(err, workers.ErrStalled) || trellis.ErrorCode(err) != trellis.CodeStalled {
		t.Fatalf("run = %v; want a stalled error", err)
	}
	for _, want := range []string{"root root is notstarted", "blocked: lint (linter crashed)", "lib (./gone.vine: ", "gone.vine does not exist"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if len(rep.Claimed) != 1 || rep.Claimed[0] != "a" {
		t.Fatalf("claimed %v; want the one task that could run (a)", rep.Claimed)
	}
}
