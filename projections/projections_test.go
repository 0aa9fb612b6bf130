package projections_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/projections"
)

type bundle struct {
	*eventstest.Bundle
	dataDir string
	svc     *handlers.Service
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{Bundle: eventstest.Start(t), dataDir: t.TempDir()}
	b.svc = handlers.NewService(b.Store, handlers.ServiceConfig{DataDir: b.dataDir})
	if err := b.svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.svc.Close() })
	return b
}

// randomWorkload adds, claims, finishes and fails tasks at random across
// three queues and returns how many tasks it added.
func randomWorkload(t *testing.T, ctx context.Context, svc *handlers.Service, seed int64, n int) int {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	queues := []string{"alpha", "beta", "gamma"}
	var claimed []*trellis.Task
	var ids []string
	added := 0
	for i := 0; i < n; i++ {
		switch op := rng.Intn(11); {
		case op < 4:
			req := trellis.AddTaskRequest{
				Queue: queues[rng.Intn(3)], Objective: fmt.Sprintf("objective %d", i),
				Inputs: []string{fmt.Sprintf("in%d", i)}, MaxSteps: 1 + rng.Intn(5),
				Metadata: map[string]string{"i": fmt.Sprint(i)},
			}
			// Scheduling: priorities, prerequisites, delays (never due
			// within the test), unique and concurrency keys.
			if rng.Intn(4) == 0 {
				req.Priority = 1 + rng.Intn(4)
			}
			if len(ids) > 0 && rng.Intn(6) == 0 {
				req.After = []string{ids[rng.Intn(len(ids))]}
			}
			if rng.Intn(10) == 0 {
				req.Delay = "1h"
			}
			if rng.Intn(10) == 0 {
				req.UniqueKey = fmt.Sprint("u", rng.Intn(3))
			}
			if rng.Intn(5) == 0 {
				req.ConcurrencyKey = fmt.Sprint("k", rng.Intn(2))
			}
			task, err := svc.Add(ctx, req)
			if trellis.ErrorCode(err) == trellis.CodeConflict {
				continue // a prerequisite that ended
			}
			if err != nil {
				t.Fatal(err)
			}
			if !task.Duplicate {
				ids = append(ids, task.TaskID)
				added++
			}
		case op == 10:
			if len(ids) == 0 {
				continue
			}
			_, err := svc.Cancel(ctx, trellis.CancelRequest{TaskID: ids[rng.Intn(len(ids))], Reason: "random"})
			if err != nil && trellis.ErrorCode(err) != trellis.CodeConflict {
				t.Fatal(err)
			}
		case op < 7:
			task, err := svc.Next(ctx, trellis.NextRequest{Queue: queues[rng.Intn(3)], Worker: fmt.Sprintf("w%d", rng.Intn(4))})
			if err != nil {
				t.Fatal(err)
			}
			if task != nil {
				claimed = append(claimed, task)
			}
		default:
			if len(claimed) == 0 {
				continue
			}
			k := rng.Intn(len(claimed))
			task := claimed[k]
			claimed = append(claimed[:k], claimed[k+1:]...)
			var err error
			if rng.Intn(3) == 0 {
				_, err = svc.Fail(ctx, trellis.FailRequest{TaskID: task.TaskID, Worker: task.ClaimedBy, Error: "boom",
					Blockers: []string{"blocker " + task.TaskID}, StepsUsed: rng.Intn(8)})
			} else {
				_, err = svc.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: task.ClaimedBy, WhatWasDone: "did " + task.Objective,
					WhatChanged: []string{"a.go"}, Citations: []string{"chunk_0123456789abcdef"}, StepsUsed: rng.Intn(8), ToolCallsUsed: rng.Intn(30)})
			}
			if trellis.ErrorCode(err) == trellis.CodeConflict {
				continue // cancelled while claimed
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return added
}

// quiet waits until the queue log stops growing (the reactor has taken up
// the ends of prerequisites).
func quiet(t *testing.T, ctx context.Context, svc *handlers.Service) {
	t.Helper()
	last, stable := uint64(0), 0
	for stable < 3 {
		seq, err := svc.Store().LastSeq(ctx, events.StreamQueue)
		if err != nil {
			t.Fatal(err)
		}
		if seq == last {
			stable++
		} else {
			last, stable = seq, 0
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(data)
	}
	return out
}

// TestReplayEqualsLive: a randomized workload, then replay; the rebuilt
// board and checkpoint files equal the live ones.
func TestReplayEqualsLive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for seed := int64(1); seed <= 3; seed++ {
		added := randomWorkload(t, ctx, b.svc, seed, 300)
		quiet(t, ctx, b.svc) // the reactor resolves dependants after the workload
		if err := b.svc.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		live := b.svc.Board().Tasks()
		liveList, err := b.svc.List(ctx, trellis.ListRequest{})
		if err != nil {
			t.Fatal(err)
		}
		liveFiles := readDir(t, b.svc.Checkpoints().Dir())
		if len(live) == 0 || added == 0 || len(liveFiles) == 0 {
			t.Fatalf("workload too small: %d tasks, %d checkpoints", len(live), len(liveFiles))
		}
		statuses := map[trellis.Status]int{}
		for _, byStatus := range liveList.Counts {
			for st, n := range byStatus {
				statuses[st] += n
			}
		}
		if statuses[trellis.StatusScheduled] == 0 || statuses[trellis.StatusCancelled] == 0 {
			t.Fatalf("seed %d: the workload left no scheduled or no cancelled task: %v", seed, statuses)
		}
		res, err := b.svc.Replay(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Projections) != 6 {
			t.Fatalf("replayed %d projections", len(res.Projections))
		}
		rebuilt := b.svc.Board().Tasks()
		if !reflect.DeepEqual(live, rebuilt) {
			t.Fatalf("seed %d: rebuilt board differs from live board (%d vs %d tasks)", seed, len(live), len(rebuilt))
		}
		rebuiltList, err := b.svc.List(ctx, trellis.ListRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(liveList, rebuiltList) {
			t.Fatalf("seed %d: rebuilt list/counts differ", seed)
		}
		if got := readDir(t, b.svc.Checkpoints().Dir()); !reflect.DeepEqual(liveFiles, got) {
			t.Fatalf("seed %d: rebuilt checkpoints differ (%d vs %d files)", seed, len(liveFiles), len(got))
		}
	}
}

// TestProjectionResumesAfterRestart: a restarted service resumes each
// projection from its saved position and ends equal to a full rebuild.
func TestProjectionResumesAfterRestart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	randomWorkload(t, ctx, b.svc, 7, 150)
	if err := b.svc.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	live := b.svc.Board().Tasks()
	if err := b.svc.Close(); err != nil {
		t.Fatal(err)
	}
	// The position and state were persisted together.
	saved := projections.NewBoard(filepath.Join(b.dataDir, "projections"))
	seq, err := saved.Load()
	if err != nil || seq == 0 || !reflect.DeepEqual(saved.Tasks(), live) {
		t.Fatalf("board not saved: seq %d, %d tasks (live %d), %v", seq, len(saved.Tasks()), len(live), err)
	}
	if err := saved.Close(); err != nil {
		t.Fatal(err)
	}
	// More events while the service is down.
	other := handlers.NewService(b.Store, handlers.ServiceConfig{DataDir: t.TempDir()})
	randomWorkload(t, ctx, other, 8, 150)

	restarted := handlers.NewService(b.Store, handlers.ServiceConfig{DataDir: b.dataDir})
	restarted.Board().SetReplayMin(1) // the backlog is folded without per-commit syncs
	if err := restarted.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer restarted.Close()
	if err := restarted.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	fresh := handlers.NewService(b.Store, handlers.ServiceConfig{DataDir: t.TempDir()})
	if err := fresh.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	// Both services run a reactor, which may still append (releasing the
	// dependents of tasks the second workload ended while no reactor ran):
	// compare the boards at one position of the log, the same before and
	// after both caught up (ctx's minute bounds the wait: LastSeq fails
	// once it ends).
	for {
		before, err := b.Store.LastSeq(ctx, events.StreamQueue)
		if err != nil {
			t.Fatal(err)
		}
		if err := restarted.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		if err := fresh.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		resumed, scratch := restarted.Board().Tasks(), fresh.Board().Tasks()
		after, err := b.Store.LastSeq(ctx, events.StreamQueue)
		if err != nil {
			t.Fatal(err)
		}
		if after != before {
			time.Sleep(50 * time.Millisecond) // the log moved while the boards were read
			continue
		}
		if !reflect.DeepEqual(resumed, scratch) {
			t.Fatalf("resumed board differs from a board built from scratch at #%d:\n%s", after, boardDiff(resumed, scratch))
		}
		return
	}
}

func TestCheckpointMarkdown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	task, err := b.svc.Add(ctx, trellis.AddTaskRequest{Objective: "Fix bug in payment processing", MaxSteps: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.Next(ctx, trellis.NextRequest{Worker: "agent-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: "agent-1",
		WhatWasDone: "Fixed null pointer bug in payment handler", WhatChanged: []string{"payment.py", "tests/test_payment.py"},
		WhatNext: "Deploy to staging", Citations: []string{"chunk_xyz123"}, StepsUsed: 3}); err != nil {
		t.Fatal(err)
	}
	if err := b.svc.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(b.svc.Checkpoints().Path(task.TaskID))
	if err != nil {
		t.Fatal(err)
	}
	md := string(data)
	want := []string{
		"# Checkpoint: " + task.TaskID + "\n",
		"**Created:** ",
		"## What Was Done\n\nFixed null pointer bug in payment handler\n",
		"## What Changed\n\n- payment.py\n- tests/test_payment.py\n",
		"## What's Next\n\nDeploy to staging\n",
		"## Blockers/Errors\n\n- Budget exhausted\n",
		"## Citations Used\n\n- chunk_xyz123\n",
		"**Budget exhausted:** yes",
	}
	for _, w := range want {
		if !strings.Contains(md, w) {
			t.Errorf("checkpoint lacks %q:\n%s", w, md)
		}
	}
	order := []string{"## What Was Done", "## What Changed", "## What's Next", "## Blockers/Errors", "## Citations Used"}
	idx := make([]int, len(order))
	for i, h := range order {
		idx[i] = strings.Index(md, h)
	}
	if !sort.IntsAreSorted(idx) {
		t.Errorf("sections out of order: %v", idx)
	}
}

// boardDiff names the tasks two boards disagree on.
func boardDiff(a, b []*trellis.Task) string {
	index := func(ts []*trellis.Task) map[string]*trellis.Task {
		m := map[string]*trellis.Task{}
		for _, t := range ts {
			m[t.TaskID] = t
		}
		return m
	}
	ma, mb := index(a), index(b)
	var out []string
	for id, ta := range ma {
		tb := mb[id]
		if !reflect.DeepEqual(ta, tb) {
			ja, _ := json.Marshal(ta)
			jb, _ := json.Marshal(tb)
			out = append(out, fmt.Sprintf("%s:\n  resumed %s\n  fresh   %s", id, ja, jb))
		}
	}
	for id := range mb {
		if ma[id] == nil {
			out = append(out, id+": only in fresh")
		}
	}
	sort.Strings(out)
	return fmt.Sprintf("%d and %d tasks; %s", len(a), len(b), strings.Join(out, "\n"))
}
