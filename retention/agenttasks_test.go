package retention_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/internal/servicetest"
	"github.com/trellis/trellis/retention"
)

// TestPruneAgentTasks: a completed agent task is archived and removed
// (its name keeps a tombstone); an open one keeps its events, takes an
// agent and completes after the prune. Show answers not found for the
// pruned task (by name and by id), list leaves it out, a new task can
// take the pruned name, audit verify is OK on the live log (under the
// key) and on the archive, and an edited archive is found.
func TestPruneAgentTasks(t *testing.T) {
	t.Parallel()
	svc, b := servicetest.Start(t)
	ctx := ctxT(t)
	key, err := audit.AnchorKey(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	done, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "fix-auth", Description: "Fix the auth bug", Objectives: []string{"Fix it"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: "fix-auth", Agent: "a1", Role: "implementer"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TaskComplete(ctx, trellis.AgentTaskCompleteRequest{Task: "fix-auth", Force: true}); err != nil {
		t.Fatal(err)
	}
	open, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "write-docs", Description: "Write the docs", Objectives: []string{"Write"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: "write-docs", Agent: "a2", Role: "writer"}); err != nil {
		t.Fatal(err)
	}
	before := countEvents(t, b.Store, events.StreamTasks)
	dir := t.TempDir()
	res, err := retention.Prune(ctx, b.Store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	after := countEvents(t, b.Store, events.StreamTasks)
	t.Logf("agent tasks' stream: %d events before the prune, %d after (%d task names, %d events pruned; kept %v)", before, after, res.AgentTasks, res.AgentTaskEvents, res.AgentTasksKept)
	if res.AgentTasks != 1 || res.AgentTasksKept["open"] != 1 || after != before-res.AgentTaskEvents+1 {
		t.Fatalf("pruned %d task names, %d events (kept %v), %d -> %d events; want the completed one pruned, its tombstone added, the open one kept",
			res.AgentTasks, res.AgentTaskEvents, res.AgentTasksKept, before, after)
	}
	for _, ref := range []string{"fix-auth", done.TaskID} {
		if _, err := svc.TaskShow(ctx, ref); trellis.ErrorCode(err) != trellis.CodeNotFound {
			t.Fatalf("show of the pruned task %s: %v; want not_found", ref, err)
		}
	}
	list, err := svc.TaskList(ctx, trellis.AgentTaskListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].TaskID != open.TaskID {
		t.Fatalf("list after the prune: %+v; want only the open task", list)
	}
	verifyKeyed := func(when string) {
		t.Helper()
		var fs []audit.Finding
		if _, err := audit.Verify(ctx, b.Store, audit.VerifyOptions{AnchorKey: key}, func(x audit.Finding) error { fs = append(fs, x); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(fs) > 0 {
			t.Fatalf("verify %s: %v", when, fs)
		}
	}
	verifyKeyed("after the prune")
	var archive string
	for _, ar := range res.Archives {
		if ar.AgentTasks > 0 {
			archive = ar.File
			if fs, rep := verifyArchive(t, ar.File); len(fs) > 0 || rep.Digest != ar.Digest {
				t.Fatalf("verify --file %s: %v", ar.File, fs)
			}
		}
	}
	if archive == "" {
		t.Fatalf("no archive of the agent tasks: %+v", res.Archives)
	}

	// The open task takes an agent and completes; the pruned name takes
	// a new task.
	if _, err := svc.TaskJoin(ctx, trellis.AgentTaskJoinRequest{Task: "write-docs", Agent: "a3", Role: "reviewer"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TaskComplete(ctx, trellis.AgentTaskCompleteRequest{Task: "write-docs", Force: true}); err != nil {
		t.Fatal(err)
	}
	again, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "fix-auth", Description: "Fix auth again", Objectives: []string{"Fix"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := svc.TaskShow(ctx, "fix-auth"); err != nil || got.TaskID != again.TaskID {
		t.Fatalf("the new task of the pruned name: %+v %v", got, err)
	}
	verifyKeyed("after the kept task completed and the name was taken again")
	res2, err := retention.Prune(ctx, b.Store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if res2.AgentTasks != 1 {
		t.Fatalf("second prune: %d task names (kept %v), want the one completed since", res2.AgentTasks, res2.AgentTasksKept)
	}
	verifyKeyed("after the second prune")

	// Replay == live: a service started on the pruned log (task views
	// folded from it, no saved state) lists the same tasks.
	fresh := servicetest.StartOn(t, b, handlers.ServiceConfig{DataDir: t.TempDir()})
	liveList, err := svc.TaskList(ctx, trellis.AgentTaskListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	replayed, err := fresh.TaskList(ctx, trellis.AgentTaskListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(liveList, replayed) || len(liveList) != 1 || liveList[0].TaskID != again.TaskID {
		t.Fatalf("live task list %+v; replayed from the pruned log %+v; want the same, only the new fix-auth", liveList, replayed)
	}

	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	tampered := strings.Replace(string(data), "Fix the auth bug", "Fix the auth BUG", 1)
	if tampered == string(data) {
		t.Fatal("the archive does not hold the task's description")
	}
	if err := os.WriteFile(archive, []byte(tampered), 0o600); err != nil {
		t.Fatal(err)
	}
	if fs, _ := verifyArchive(t, archive); len(fs) == 0 {
		t.Fatal("verify --file found nothing in an edited archive")
	}
}

// TestPruneAgentTasksStopped: a prune stopped after it tombstoned a
// batch of completed agent tasks but before their record leaves every
// event in the log (verify OK, show not found); one stopped after the
// record, before the removal, leaves events the record accounts for
// (verify OK). The next prune finishes each.
func TestPruneAgentTasksStopped(t *testing.T) {
	t.Parallel()
	svc, b := servicetest.Start(t)
	ctx := ctxT(t)
	for _, name := range []string{"first", "second"} {
		if _, err := svc.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: name, Description: "task " + name, Objectives: []string{"Do"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.TaskComplete(ctx, trellis.AgentTaskCompleteRequest{Task: name, Force: true}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	check := func(when string) {
		t.Helper()
		if fs := verifyLog(t, b.Store); len(fs) > 0 {
			t.Fatalf("verify %s: %v", when, fs)
		}
		for _, name := range []string{"first", "second"} {
			if _, err := svc.TaskShow(ctx, name); trellis.ErrorCode(err) != trellis.CodeNotFound {
				t.Fatalf("show of task %s %s: %v; want not_found", name, when, err)
			}
		}
	}
	stopped, stop := context.WithCancel(ctx)
	if _, err := retention.Prune(stopped, b.Store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later, AfterRunTombstones: stop}); err == nil {
		t.Fatal("a prune stopped before its record reported success")
	}
	check("after a prune stopped before its record")
	for _, name := range []string{"first", "second"} {
		recs, _, err := b.Store.Load(ctx, events.StreamTasks, events.TaskNameFilter(name))
		if err != nil || len(recs) < 3 || recs[0].Type != events.AgentTaskCreated || recs[len(recs)-1].Type != events.AgentTaskPruned {
			t.Fatalf("task %s after a prune stopped before its record: %d events (%v); want all of them and the tombstone", name, len(recs), err)
		}
	}
	stopped, stop = context.WithCancel(ctx)
	if _, err := retention.Prune(stopped, b.Store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later, AfterRecord: stop}); err == nil {
		t.Fatal("a prune stopped after its record reported success")
	}
	check("after a prune stopped after its record")
	res, err := retention.Prune(ctx, b.Store, retention.Options{OlderThan: time.Minute, Archive: dir, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	check("after the prune that finished")
	if res.AgentTasks != 0 {
		t.Fatalf("the last prune: %d task names; want none (it finishes the stopped one's removal)", res.AgentTasks)
	}
	for _, name := range []string{"first", "second"} {
		recs, _, err := b.Store.Load(ctx, events.StreamTasks, events.TaskNameFilter(name))
		if err != nil || len(recs) != 1 || recs[0].Type != events.AgentTaskPruned {
			t.Fatalf("task %s after the prunes: %d events (%v); want its tombstone only", name, len(recs), err)
		}
	}
	for _, a := range mustGlob(t, filepath.Join(dir, "prune-*.jsonl")) {
		if fs, _ := verifyArchive(t, a); len(fs) > 0 {
			t.Fatalf("verify --file %s: %v", a, fs)
		}
	}
}
