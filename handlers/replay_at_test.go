package handlers_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/internal/servicetest"
	"github.com/trellis/trellis/projections"
	"github.com/trellis/trellis/vinegraph"
)

// views are the projections of a data dir, loaded from its files.
type views struct {
	tasks       []*trellis.Task
	counts      map[string]map[trellis.Status]int
	checkpoints map[string]string
	facts       []events.Fact
	agentTasks  []*events.AgentTask
	graphs      map[string]any
	search      []projections.Hit
}

func loadViews(t *testing.T, dataDir string) views {
	t.Helper()
	projDir := filepath.Join(dataDir, "projections")
	var v views
	board, _, err := projections.OpenBoardReadOnly(projDir)
	if err != nil {
		t.Fatal(err)
	}
	v.tasks, v.counts = board.Tasks(), board.Counts()
	if err := board.Close(); err != nil {
		t.Fatal(err)
	}
	v.checkpoints = map[string]string{}
	entries, _ := os.ReadDir(filepath.Join(dataDir, "checkpoints"))
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dataDir, "checkpoints", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		v.checkpoints[e.Name()] = string(data)
	}
	facts := projections.NewFactStore(projDir)
	if _, err := facts.Load(); err != nil {
		t.Fatal(err)
	}
	v.facts = facts.Facts(projections.FactFilter{})
	tv := projections.NewTaskViews(projDir)
	if _, err := tv.Load(); err != nil {
		t.Fatal(err)
	}
	v.agentTasks = tv.Tasks()
	fr := projections.NewFrontiers(projDir)
	if _, err := fr.Load(); err != nil {
		t.Fatal(err)
	}
	v.graphs = map[string]any{}
	for _, id := range fr.GraphIDs() {
		f, _ := fr.Frontier(id)
		v.graphs[id] = f
	}
	s := projections.NewSearch(filepath.Join(dataDir, "index"))
	if _, err := s.Load(); err != nil {
		t.Fatal(err)
	}
	if v.search, err = s.Query("version", 10, projections.Filters{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return v
}

// workload changes every domain: queue tasks, agent tasks and memory,
// code memory and a VINE graph.
func workload(t *testing.T, svc *handlers.Service, store *events.Store, ws, round string) {
	t.Helper()
	ctx := context.Background()
	servicetest.RunTask(t, svc, "jobs", "w-"+round)
	if _, err := svc.Add(ctx, trellis.AddTaskRequest{Queue: "waiting", Objective: "queued in " + round}); err != nil {
		t.Fatal(err)
	}
	name := "task-" + round
	if _, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: name, Objectives: []string{"Do " + round}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: name, Agent: "agent_1", Role: "implementer"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Observe(ctx, trellis.ObserveRequest{Task: name, Agent: "agent_1", Session: "s-" + round, Type: "decision", Text: "We use the " + round + " approach"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Consolidate(ctx, trellis.ConsolidateRequest{Level: "session", Session: "s-" + round}); err != nil {
		t.Fatal(err)
	}
	servicetest.WriteFiles(t, filepath.Join(ws, "repo"), map[string]string{"notes.md": "# Notes\n\nversion " + round + "\n"})
	if _, err := codememory.Ingest(ctx, store, codememory.IngestConfig{Root: filepath.Join(ws, "repo"), Repo: "repo"}); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(ws, "plan.vine")
	if round == "one" {
		if err := os.WriteFile(f, []byte(servicetest.Chain), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.VineImport(ctx, trellis.VineFileRequest{File: f}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.VineClaim(ctx, trellis.VineClaimRequest{File: f, Agent: "agent-" + round}); err != nil {
		t.Fatal(err)
	}
}

// TestRebuildAtEqualsLiveSnapshot: the projections rebuilt as of a moment
// equal the live ones saved at that moment, although the log moved on
// since; the live projections are not touched; a sequence point and bad
// points are handled.
func TestRebuildAtEqualsLiveSnapshot(t *testing.T) {
	t.Parallel()
	b := setupVine(t)
	ctx := context.Background()
	liveDir := t.TempDir()
	live := handlers.NewService(b.Store, handlers.ServiceConfig{DataDir: liveDir, Vine: vinegraph.Config{Roots: []string{b.ws}}})
	if err := live.Start(ctx); err != nil {
		t.Fatal(err)
	}
	workload(t, live, b.Store, b.ws, "one")
	if err := live.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	// The snapshot: the live projections saved at this moment.
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	moment := time.Now()
	time.Sleep(5 * time.Millisecond)
	snapshot := loadViews(t, liveDir)
	if len(snapshot.tasks) != 2 || len(snapshot.facts) == 0 || len(snapshot.agentTasks) != 1 || len(snapshot.graphs) != 1 || len(snapshot.search) == 0 || len(snapshot.checkpoints) != 1 {
		t.Fatalf("workload too small: %+v", snapshot)
	}
	// The log moves on (through another service).
	workload(t, b.svc, b.Store, b.ws, "two")
	if err := b.svc.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	liveBoard := b.svc.Board().Tasks()
	// The graph's history by the audit query: imported, then agent-one's
	// claim (round two finds nothing ready), chained.
	graph := auditAll(t, b.svc, trellis.AuditQuery{Graph: events.GraphID("plan.vine")})
	if len(graph) != 2 || graph[0].Type != events.GraphImported || graph[1].Actor != "agent-one" || graph[1].Prev != graph[0].Hash {
		t.Fatalf("graph audit: %d events", len(graph))
	}

	cut, err := audit.ResolvePoint(ctx, b.Store, audit.Point{Time: moment})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "asof")
	res, err := handlers.RebuildAt(ctx, b.Store, cut, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Projections) != len(b.svc.ProjectionNames()) {
		t.Fatalf("rebuilt %d projections", len(res.Projections))
	}
	rebuilt := loadViews(t, out)
	if !reflect.DeepEqual(snapshot, rebuilt) {
		t.Fatalf("rebuilt as of the moment differs from the live snapshot:\nlive    %+v\nrebuilt %+v", snapshot, rebuilt)
	}
	if got := b.svc.Board().Tasks(); !reflect.DeepEqual(got, liveBoard) || len(got) != 4 {
		t.Fatalf("the live board changed: %d tasks", len(got))
	}

	// A sequence point: the queue stream up to its 3rd event, the other
	// streams as the log stood then.
	cut, err = audit.ResolvePoint(ctx, b.Store, audit.Point{Stream: events.StreamQueue, Seq: 3})
	if err != nil || cut.Streams[events.StreamQueue] != 3 || cut.Streams[events.StreamTasks] != 0 {
		t.Fatalf("cut at queue #3: %+v, %v", cut, err)
	}
	res, err = handlers.RebuildAt(ctx, b.Store, cut, filepath.Join(t.TempDir(), "seq"), nil)
	if err != nil {
		t.Fatal(err)
	}
	board, seq, err := projections.OpenBoardReadOnly(filepath.Join(res.Dir, "projections"))
	if err != nil {
		t.Fatal(err)
	}
	defer board.Close()
	if tasks := board.Tasks(); seq != 3 || len(tasks) != 1 || tasks[0].Status != trellis.StatusDone {
		t.Fatalf("board at queue #3: seq %d, %+v", seq, tasks)
	}

	// Bad points and directories.
	if _, err := audit.ResolvePoint(ctx, b.Store, audit.Point{Stream: events.StreamQueue, Seq: 10_000}); trellis.ErrorCode(err) != trellis.CodeNotFound {
		t.Errorf("a sequence past the end: %v", err)
	}
	if _, err := handlers.RebuildAt(ctx, b.Store, cut, out, nil); trellis.ErrorCode(err) != trellis.CodeInvalid || trellis.AsError(err).Field != "out" {
		t.Errorf("a non-empty directory: %v", err)
	}
	for _, bad := range []string{"", "0", "TRELLIS_NOPE:3", "yesterday", "queue:-1"} {
		if _, err := audit.ParsePoint("until", bad, time.Now()); trellis.ErrorCode(err) != trellis.CodeInvalid || trellis.AsError(err).Field != "until" {
			t.Errorf("point %q: %v", bad, err)
		}
	}
	for in, want := range map[string]audit.Point{
		"12":                   {Stream: events.StreamQueue, Seq: 12},
		"vine:7":               {Stream: events.StreamVine, Seq: 7},
		"TRELLIS_TASKS:2":      {Stream: events.StreamTasks, Seq: 2},
		"2026-01-02T03:04:05Z": {Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
	} {
		if got, err := audit.ParsePoint("until", in, time.Now()); err != nil || got != want {
			t.Errorf("point %q: %+v, %v", in, got, err)
		}
	}
}

// auditAll reads every event of an audit query, page after page.
func auditAll(t *testing.T, svc trellis.AuditService, q trellis.AuditQuery) []trellis.AuditEvent {
	t.Helper()
	var out []trellis.AuditEvent
	if err := audit.All(context.Background(), svc, q, func(ev trellis.AuditEvent) error {
		out = append(out, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
