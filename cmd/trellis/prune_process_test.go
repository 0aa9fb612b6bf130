package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/server"
	"github.com/trellis/trellis/workflow"
)

// finishedTasks adds n tasks to queue and cancels them: n finished tasks
// of two events each.
func finishedTasks(t *testing.T, srv *server.Server, queue string, n int) []string {
	t.Helper()
	ctx := context.Background()
	svc := srv.Service()
	var ids []string
	for len(ids) < n {
		var req trellis.AddManyRequest
		for i := 0; i < min(n-len(ids), trellis.MaxAddMany); i++ {
			req.Tasks = append(req.Tasks, trellis.AddTaskRequest{Queue: queue, Objective: fmt.Sprintf("prune me %d", len(ids)+i)})
		}
		res, err := svc.AddMany(ctx, req)
		if err != nil || len(res.Errors) > 0 {
			t.Fatalf("add many: %v %v", err, res)
		}
		for _, task := range res.Tasks {
			ids = append(ids, task.TaskID)
		}
	}
	q := svc.QueueHandler()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(ids); i += 4 {
				if _, err := q.Cancel(ctx, trellis.CancelRequest{TaskID: ids[i], Reason: "done with it"}); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return ids
}

// finishedRuns appends n finished workflow runs (started, then
// completed, chained as the engine chains them) to the workflow stream.
func finishedRuns(t *testing.T, srv *server.Server, n int) []string {
	t.Helper()
	ctx := context.Background()
	store := srv.Store()
	ids := make([]string, n)
	starts := make([]events.Pending, n)
	for i := range ids {
		ids[i] = events.NewID(time.Now())
		env, err := events.NewEnvelope(time.Now(), workflow.Started, ids[i], "test", 1,
			workflow.StartedPayload{Workflow: "pruned", Version: 1, Queue: "wf-pruned", Input: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		starts[i] = events.Pending{Subject: workflow.RunSubject(ids[i], workflow.Started), Envelope: env, Expect: events.Expect{Filter: workflow.RunFilter(ids[i])}}
	}
	ends := make([]events.Pending, n)
	for i, r := range store.AppendAll(ctx, starts) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		env, err := events.NewEnvelope(time.Now(), workflow.Completed, ids[i], "test", 1, workflow.EndPayload{Output: json.RawMessage(`"finished run"`)})
		if err != nil {
			t.Fatal(err)
		}
		env.Prev = events.Hash(starts[i].Envelope)
		ends[i] = events.Pending{Subject: workflow.RunSubject(ids[i], workflow.Completed), Envelope: env, Expect: events.Expect{Filter: workflow.RunFilter(ids[i]), LastSeq: r.Seq}}
	}
	for _, r := range store.AppendAll(ctx, ends) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	return ids
}

// finishedAgentTasks appends n completed agent tasks (created, then
// completed, chained) to the agent tasks' stream and returns their names.
func finishedAgentTasks(t *testing.T, srv *server.Server, n int) []string {
	t.Helper()
	ctx := context.Background()
	store := srv.Store()
	names := make([]string, n)
	created := make([]events.Pending, n)
	for i := range names {
		names[i] = fmt.Sprintf("pruned-%d", i)
		id := events.NewID(time.Now())
		env, err := events.NewEnvelope(time.Now(), events.AgentTaskCreated, names[i], "test", events.TasksSchema,
			events.AgentTaskCreatedPayload{TaskID: id, Name: names[i], ParentBranch: "main", Objectives: []events.ObjectiveSpec{}, MemoryScope: events.TaskScope(id)})
		if err != nil {
			t.Fatal(err)
		}
		created[i] = events.Pending{Subject: events.TasksSubject(names[i], events.AgentTaskCreated), Envelope: env, Expect: events.Expect{Filter: events.TaskNameFilter(names[i])}}
	}
	ends := make([]events.Pending, n)
	for i, r := range store.AppendAll(ctx, created) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		var p events.AgentTaskCreatedPayload
		_ = json.Unmarshal(created[i].Envelope.Payload, &p)
		env, err := events.NewEnvelope(time.Now(), events.AgentTaskCompleted, names[i], "test", events.TasksSchema, events.AgentTaskCompletedPayload{TaskID: p.TaskID})
		if err != nil {
			t.Fatal(err)
		}
		env.Prev = events.Hash(created[i].Envelope)
		ends[i] = events.Pending{Subject: events.TasksSubject(names[i], events.AgentTaskCompleted), Envelope: env, Expect: events.Expect{Filter: events.TaskNameFilter(names[i]), LastSeq: r.Seq}}
	}
	for _, r := range store.AppendAll(ctx, ends) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	return names
}

// checkAgentTasksPruned checks the agent tasks after prunes as
// checkRunsPruned checks runs: each name is named by at most one record
// and then shows as not found, its tombstone left; one no record names is
// whole (completed, or tombstoned by a prune killed before its record).
func checkAgentTasksPruned(t *testing.T, srv *server.Server, names []string, all bool) {
	t.Helper()
	ctx := context.Background()
	named := map[string]int{}
	for _, p := range pruneRecords(t, srv.Store()) {
		for _, agg := range p.Aggregates {
			if name, ok := strings.CutPrefix(agg, "agent-task/"); ok {
				named[name]++
			}
		}
	}
	pruned, tombstoned := 0, 0
	for _, name := range names {
		task, err := srv.Service().TaskShow(ctx, name)
		switch named[name] {
		case 0:
			if all {
				t.Fatalf("agent task %s was not pruned", name)
			}
			if err == nil && task.Status == events.AgentTaskStatusCompleted {
				continue
			}
			recs, _, lerr := srv.Store().Load(ctx, events.StreamTasks, events.TaskNameFilter(name))
			if lerr != nil || len(recs) != 3 || recs[2].Type != events.AgentTaskPruned {
				t.Fatalf("agent task %s neither pruned nor whole: show %+v %v, %d events in the log (%v)", name, task, err, len(recs), lerr)
			}
			tombstoned++
		case 1:
			if trellis.ErrorCode(err) != trellis.CodeNotFound {
				t.Fatalf("show of pruned agent task %s: %+v %v; want not found", name, task, err)
			}
			pruned++
		default:
			t.Fatalf("agent task %s is named by %d prune records", name, named[name])
		}
	}
	t.Logf("%d of %d agent tasks pruned, %d tombstoned awaiting their record", pruned, len(names), tombstoned)
}

// checkRunsPruned checks the runs after prunes: each is named by at most
// one record (checkPruned verified the archives) and then shows as not
// found; one that no record names is whole in the log (completed, or
// tombstoned by a prune killed before its record, every event still
// there). With all, every run is named.
func checkRunsPruned(t *testing.T, srv *server.Server, ids []string, all bool) {
	t.Helper()
	ctx := context.Background()
	named := map[string]int{}
	for _, p := range pruneRecords(t, srv.Store()) {
		for _, agg := range p.Aggregates {
			if id, ok := strings.CutPrefix(agg, "run/"); ok {
				named[id]++
			}
		}
	}
	e := srv.Service().Workflows()
	pruned, tombstoned := 0, 0
	for _, id := range ids {
		run, err := e.Show(ctx, id)
		switch named[id] {
		case 0:
			if all {
				t.Fatalf("run %s was not pruned", id)
			}
			if err == nil && run.Status == workflow.StatusCompleted {
				continue
			}
			recs, _, lerr := srv.Store().Load(ctx, events.StreamWorkflows, workflow.RunFilter(id))
			if lerr != nil || len(recs) != 3 || recs[2].Type != workflow.Pruned {
				t.Fatalf("run %s neither pruned nor whole: show %+v %v, %d events in the log (%v)", id, run, err, len(recs), lerr)
			}
			tombstoned++
		case 1:
			if trellis.ErrorCode(err) != trellis.CodeNotFound {
				t.Fatalf("show of pruned run %s: %+v %v; want not found", id, run, err)
			}
			pruned++
		default:
			t.Fatalf("run %s is named by %d prune records", id, named[id])
		}
	}
	t.Logf("%d of %d runs pruned, %d tombstoned awaiting their record", pruned, len(ids), tombstoned)
}

// verifyStore runs audit verify on the live log.
func verifyStore(t *testing.T, store *events.Store) []audit.Finding {
	t.Helper()
	var fs []audit.Finding
	if _, err := audit.Verify(context.Background(), store, audit.VerifyOptions{}, func(f audit.Finding) error { fs = append(fs, f); return nil }); err != nil {
		t.Fatal(err)
	}
	return fs
}

// pruneRecords reads the prune records: archive name -> its payload.
func pruneRecords(t *testing.T, store *events.Store) map[string]events.PrunedPayload {
	t.Helper()
	recs, _, err := store.Load(context.Background(), events.StreamQueue, events.RetentionFilter)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]events.PrunedPayload{}
	for _, r := range recs {
		var p events.PrunedPayload
		if err := r.DecodePayload(&p); err != nil {
			t.Fatal(err)
		}
		out[p.Archive] = p
	}
	return out
}

// checkPruned checks the state after prunes: audit verify OK; every task
// either still in the log or named by exactly one record whose archive
// exists, verifies and holds its events; with all, every task is pruned.
func checkPruned(t *testing.T, srv *server.Server, archive string, ids []string, all bool) {
	t.Helper()
	store := srv.Store()
	if fs := verifyStore(t, store); len(fs) > 0 {
		t.Fatalf("audit verify after the prune: %v", fs)
	}
	recs := pruneRecords(t, store)
	named := map[string]int{}
	for name, p := range recs {
		path := filepath.Join(archive, name)
		var fs []audit.Finding
		rep, err := audit.VerifyFile(context.Background(), path, func(f audit.Finding) error { fs = append(fs, f); return nil })
		if err != nil {
			t.Fatalf("the archive of record %s: %v", name, err)
		}
		if len(fs) > 0 || rep.Digest != p.Digest {
			t.Fatalf("archive %s: findings %v, digest %s (record says %s)", name, fs, rep.Digest, p.Digest)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, agg := range p.Aggregates {
			_, id, _ := strings.Cut(agg, "/")
			named[id]++
			if !strings.Contains(string(data), `"aggregate_id":"`+id+`"`) {
				t.Fatalf("archive %s does not hold task %s its record names", name, id)
			}
		}
	}
	q := srv.Service().QueueHandler()
	pruned := 0
	for _, id := range ids {
		switch named[id] {
		case 0:
			if all {
				t.Fatalf("task %s was not pruned", id)
			}
			task, err := q.Show(context.Background(), id)
			if err != nil || task.Status != trellis.StatusCancelled {
				t.Fatalf("task %s neither pruned nor whole: %+v %v", id, task, err)
			}
		case 1:
			pruned++
		default:
			t.Fatalf("task %s is named by %d prune records", id, named[id])
		}
	}
	t.Logf("%d of %d tasks pruned, %d record(s)", pruned, len(ids), len(recs))
}

// TestPruneProcessKilled: a `trellis prune` process killed with SIGKILL in
// the middle of a prune leaves the log verifiable, each task, workflow
// run and agent task either whole or archived and recorded; a prune run
// again finishes the job.
func TestPruneProcessKilled(t *testing.T) {
	t.Parallel()
	srv, url := queueServer(t)
	start := time.Now()
	ids := finishedTasks(t, srv, "kill", 600)
	runs := finishedRuns(t, srv, 600)
	agentTasks := finishedAgentTasks(t, srv, 200)
	t.Logf("600 finished tasks, 600 finished runs and 200 completed agent tasks in %s", time.Since(start))
	archive := filepath.Join(t.TempDir(), "archive")
	// Kill it once its sixth archive is written (the prune is under way:
	// its batches of 200 tasks follow one another, then its batches of
	// 200 runs, then the agent tasks'; the kill lands anywhere in the
	// third batch of runs or later).
	killPruneAfterArchives(t, url, archive, 6)
	checkPruned(t, srv, archive, ids, false)
	checkRunsPruned(t, srv, runs, false)
	checkAgentTasksPruned(t, srv, agentTasks, false)

	pruneAgain(t, url, archive)
	checkPruned(t, srv, archive, ids, true)
	checkRunsPruned(t, srv, runs, true)
	checkAgentTasksPruned(t, srv, agentTasks, true)
}

// TestPruneProcessesConcurrent: two prunes at once: each either completes
// or stops with a conflict; no task is pruned twice, verify stays OK.
func TestPruneProcessesConcurrent(t *testing.T) {
	t.Parallel()
	srv, url := queueServer(t)
	ids := finishedTasks(t, srv, "twice", 800)
	archive := filepath.Join(t.TempDir(), "archive")
	if _, err := audit.AnchorKey(pruneData(archive), true); err != nil { // both prunes sign with it
		t.Fatal(err)
	}
	type outcome struct {
		code   int
		stderr string
	}
	results := make(chan outcome, 2)
	for i := 0; i < 2; i++ {
		go func() {
			cmd := exec.Command(trellisBinary(t), "prune", "--nats-url", url, "--data", pruneData(archive), "--older-than", "1ms", "--archive", archive, "--json")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				code = -1
			}
			results <- outcome{code, stderr.String()}
		}()
	}
	ok := 0
	for i := 0; i < 2; i++ {
		r := <-results
		switch {
		case r.code == 0:
			ok++
		case r.code == trellis.ExitCode(trellis.CodeConflict) && strings.Contains(r.stderr, "another prune"):
		default:
			t.Fatalf("prune exit %d: %s", r.code, r.stderr)
		}
	}
	if ok == 0 {
		t.Fatal("neither prune completed")
	}
	checkPruned(t, srv, archive, ids, true)
}

// TestPruneBadInput: bad durations, an archive that is a file, not
// writable, or inside the log's store: a clear error and nothing pruned.
func TestPruneBadInput(t *testing.T) {
	t.Parallel()
	srv, url := queueServer(t)
	ids := finishedTasks(t, srv, "bad", 5)
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(dir, "read-only")
	if err := os.Mkdir(readOnly, 0o500); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--older-than", "-5m", "--archive", dir}, "positive"},
		{[]string{"--older-than", "0s", "--archive", dir}, "positive"},
		{[]string{"--older-than", "-3d", "--archive", dir}, "positive"},
		{[]string{"--older-than", "soon", "--archive", dir}, "not a duration"},
		{[]string{"--older-than", "1e9999h", "--archive", dir}, "not a duration"},
		{[]string{"--older-than", "1000000d", "--archive", dir}, "at most"},
		{[]string{"--archive", dir}, "older-than"},
		{[]string{"--older-than", "1ms"}, "archive"},
		{[]string{"--older-than", "1ms", "--archive", dir, "--rate", "-3"}, "rate: must be between 0"},
		{[]string{"--older-than", "1ms", "--archive", dir, "--rate", "99999999"}, "rate: must be between 0"},
		{[]string{"--older-than", "1ms", "--archive", file}, "is a file"},
		{[]string{"--older-than", "1ms", "--archive", filepath.Join(data, "jetstream", "..", "jetstream", "x")}, "inside the log"},
	} {
		args := append([]string{"prune", "--nats-url", url, "--data", data}, c.args...)
		code, _, stderr := cli(t, args...)
		if code != trellis.ExitCode(trellis.CodeInvalid) || !strings.Contains(stderr, c.want) {
			t.Errorf("trellis %v: exit %d, stderr %q; want invalid mentioning %q", c.args, code, stderr, c.want)
		}
	}
	if os.Geteuid() != 0 { // root writes anywhere
		code, _, stderr := cli(t, "prune", "--nats-url", url, "--data", data, "--older-than", "1ms", "--archive", readOnly)
		if code != trellis.ExitCode(trellis.CodeInvalid) || !strings.Contains(stderr, "cannot write") {
			t.Errorf("read-only archive: exit %d, %q", code, stderr)
		}
	}
	if len(pruneRecords(t, srv.Store())) != 0 {
		t.Fatal("a refused prune recorded something")
	}
	// The same log prunes fine with good input.
	code, out, stderr := cli(t, "prune", "--nats-url", url, "--data", data, "--older-than", "1ms", "--archive", filepath.Join(dir, "ok"), "--json")
	if code != 0 {
		t.Fatalf("prune: %d %s", code, stderr)
	}
	var res struct {
		Tasks int `json:"tasks"`
	}
	if err := json.NewDecoder(bufio.NewReader(strings.NewReader(out))).Decode(&res); err != nil || res.Tasks != len(ids) {
		t.Fatalf("prune --json: %v %s", err, out)
	}
	checkPruned(t, srv, filepath.Join(dir, "ok"), ids, true)
}
