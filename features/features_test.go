// Package features runs Trellis's godog feature files: user workflows in
// plain language, executed against a real Trellis server (embedded NATS
// JetStream, NATS API, projections) from `go test`, in strict mode.
package features

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cucumber/godog"
	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/handlers/natsapi"
	"github.com/trellis/trellis/server"
)

func TestFeatures(t *testing.T) {
	suite := godog.TestSuite{
		Name:                "trellis",
		ScenarioInitializer: initScenario,
		Options: &godog.Options{
			Format:   "pretty",
			Paths:    []string{"."},
			Strict:   true,
			TestingT: t,
		},
	}
	if suite.Run() != 0 {
		t.Fatal("feature scenarios failed")
	}
}

// world is one scenario's state.
type world struct {
	dir    string
	srv    *server.Server
	nc     *nats.Conn
	client *natsapi.Client
	task   *trellis.Task
	ids    []string
	saved  []*trellis.Task
	files  map[string]string
	lease  time.Duration
	stops  []func()
	ws     string
	rounds [][]string
}

func initScenario(sc *godog.ScenarioContext) {
	w := &world{}
	sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
		w.close()
		return ctx, err
	})
	poolSteps(sc, w)
	vineSteps(sc, w)
	memorySteps(sc, w)
	codeSteps(sc, w)
	sc.Step(`^a running Trellis server$`, w.runningServer)
	sc.Step(`^I add (\d+) tasks "([^"]*)" with a budget of (\d+) tool calls and (\d+) steps$`, w.addNumbered)
	sc.Step(`^a worker "([^"]*)" runs the loop (\d+) times: take the next task, then finish it with "([^"]*)" and next step "([^"]*)"$`, w.workerLoop)
	sc.Step(`^(\d+) tasks are done$`, w.tasksDone)
	sc.Step(`^every done task has a Markdown checkpoint with the sections of the seed$`, w.checkpointsHaveSections)
	sc.Step(`^taking the next task returns nothing$`, w.nextIsNothing)
	sc.Step(`^a queued task "([^"]*)"$`, w.queuedTask)
	sc.Step(`^a queued task "([^"]*)" with a budget of (\d+) tool calls and (\d+) steps$`, w.queuedTaskBudget)
	sc.Step(`^worker "([^"]*)" takes the next task$`, w.takesNext)
	sc.Step(`^worker "([^"]*)" fails it with error "([^"]*)" and blockers "([^"]*)" and "([^"]*)"$`, w.failsWith)
	sc.Step(`^the task is failed$`, w.taskIs(trellis.StatusFailed))
	sc.Step(`^its checkpoint lists "([^"]*)", "([^"]*)" and "([^"]*)" under Blockers/Errors$`, w.checkpointBlockers)
	sc.Step(`^finishing the task again is refused as a conflict$`, w.finishAgainConflict)
	sc.Step(`^worker "([^"]*)" finishing it is refused as a conflict$`, w.otherWorkerConflict)
	sc.Step(`^the task is still claimed by "([^"]*)"$`, w.stillClaimedBy)
	sc.Step(`^worker "([^"]*)" finishes it having used (\d+) steps and (\d+) tool calls$`, w.finishesUsing)
	sc.Step(`^the task is done and marked budget exhausted$`, w.doneExhausted)
	sc.Step(`^its checkpoint says the budget was exhausted$`, w.checkpointExhausted)
	sc.Step(`^(\d+) queued tasks in queue "([^"]*)"$`, w.queuedInQueue)
	sc.Step(`^(\d+) workers claim and complete tasks from queue "([^"]*)" until it is empty$`, w.workersDrain)
	sc.Step(`^every one of the (\d+) tasks was claimed exactly once$`, w.claimedExactlyOnce)
	sc.Step(`^the log holds exactly one claimed and one completed event per task$`, w.logOnePerTask)
	sc.Step(`^a mixed workload of (\d+) operations has run$`, w.mixedWorkload)
	sc.Step(`^I remember the queue board and the checkpoints$`, w.remember)
	sc.Step(`^I replay the log$`, w.replay)
	sc.Step(`^the queue board is the same as before$`, w.boardSame)
	sc.Step(`^the checkpoint files are the same as before$`, w.filesSame)
	sc.Step(`^the audit of the task lists the events "([^"]*)" in order$`, w.auditLists)
	sc.Step(`^the claimed and completed events name "([^"]*)" as the actor$`, w.auditActors)
}

func ctxT() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*time.Minute)
}

func (w *world) runningServer() error { return w.runningServerWith(handlers.CodeConfig{}) }

// runningServerWith starts the scenario's server with code-memory models.
func (w *world) runningServerWith(code handlers.CodeConfig) error {
	dir, err := os.MkdirTemp("", "trellis-feature-")
	if err != nil {
		return err
	}
	w.dir = dir
	ctx, cancel := ctxT()
	defer cancel()
	w.srv, err = server.Start(ctx, server.Config{DataDir: dir, NATSAddr: "127.0.0.1:0", ServeAPI: true, SyncInterval: time.Second, Code: code})
	if err != nil {
		return err
	}
	return w.connectClient()
}

// connectClient connects the scenario's client over NATS, as workers on
// another machine would.
func (w *world) connectClient() error {
	var err error
	if w.nc, err = nats.Connect(w.srv.Info().NATSURL); err != nil {
		return err
	}
	w.client = natsapi.NewClient(w.nc, 0)
	return nil
}

func (w *world) close() {
	w.stopPools()
	if w.nc != nil {
		w.nc.Close()
	}
	if w.srv != nil {
		w.srv.Close()
	}
	if w.dir != "" {
		_ = os.RemoveAll(w.dir)
	}
}

func (w *world) addNumbered(n int, pattern string, calls, steps int) error {
	ctx, cancel := ctxT()
	defer cancel()
	for i := 1; i <= n; i++ {
		t, err := w.client.Add(ctx, trellis.AddTaskRequest{Objective: strings.ReplaceAll(pattern, "N", fmt.Sprint(i)), MaxToolCalls: calls, MaxSteps: steps})
		if err != nil {
			return err
		}
		w.ids = append(w.ids, t.TaskID)
	}
	return nil
}

func (w *world) workerLoop(worker string, n int, done, next string) error {
	ctx, cancel := ctxT()
	defer cancel()
	for i := 0; i < n; i++ {
		t, err := w.client.Next(ctx, trellis.NextRequest{Worker: worker})
		if err != nil {
			return err
		}
		if t == nil {
			return fmt.Errorf("iteration %d: no task", i+1)
		}
		if want := fmt.Sprintf("Process batch %d", i+1); t.Objective != want {
			return fmt.Errorf("iteration %d took %q; want the oldest, %q", i+1, t.Objective, want)
		}
		if _, err := w.client.Done(ctx, trellis.DoneRequest{TaskID: t.TaskID, Worker: worker, WhatWasDone: done, WhatNext: next}); err != nil {
			return err
		}
	}
	return nil
}

func (w *world) tasksDone(n int) error {
	ctx, cancel := ctxT()
	defer cancel()
	l, err := w.client.List(ctx, trellis.ListRequest{Status: trellis.StatusDone})
	if err != nil {
		return err
	}
	if len(l.Tasks) != n {
		return fmt.Errorf("%d tasks done; want %d", len(l.Tasks), n)
	}
	return nil
}

func (w *world) catchUp() error {
	ctx, cancel := ctxT()
	defer cancel()
	return w.srv.Service().CatchUp(ctx)
}

func (w *world) checkpoint(id string) (string, error) {
	if err := w.catchUp(); err != nil {
		return "", err
	}
	data, err := os.ReadFile(filepath.Join(w.dir, "checkpoints", id+".md"))
	return string(data), err
}

func (w *world) checkpointsHaveSections() error {
	for _, id := range w.ids {
		md, err := w.checkpoint(id)
		if err != nil {
			return err
		}
		for _, h := range []string{"# Checkpoint: " + id, "**Created:**", "## What Was Done\n\nBatch processed", "## What Changed", "## What's Next\n\nNext batch", "## Blockers/Errors\n\n- None", "## Citations Used"} {
			if !strings.Contains(md, h) {
				return fmt.Errorf("checkpoint of %s lacks %q:\n%s", id, h, md)
			}
		}
	}
	return nil
}

func (w *world) nextIsNothing() error {
	ctx, cancel := ctxT()
	defer cancel()
	t, err := w.client.Next(ctx, trellis.NextRequest{Worker: "probe"})
	if err != nil {
		return err
	}
	if t != nil {
		return fmt.Errorf("got task %s; want nothing", t.TaskID)
	}
	return nil
}

func (w *world) queuedTask(objective string) error { return w.queuedTaskBudget(objective, 0, 0) }

func (w *world) queuedTaskBudget(objective string, calls, steps int) error {
	ctx, cancel := ctxT()
	defer cancel()
	t, err := w.client.Add(ctx, trellis.AddTaskRequest{Objective: objective, MaxToolCalls: calls, MaxSteps: steps})
	if err != nil {
		return err
	}
	w.task = t
	return nil
}

func (w *world) takesNext(worker string) error {
	ctx, cancel := ctxT()
	defer cancel()
	t, err := w.client.Next(ctx, trellis.NextRequest{Worker: worker})
	if err != nil {
		return err
	}
	if t == nil || t.TaskID != w.task.TaskID {
		return fmt.Errorf("next gave %v; want task %s", t, w.task.TaskID)
	}
	w.task = t
	return nil
}

func (w *world) failsWith(worker, msg, b1, b2 string) error {
	ctx, cancel := ctxT()
	defer cancel()
	t, err := w.client.Fail(ctx, trellis.FailRequest{TaskID: w.task.TaskID, Worker: worker, Error: msg, WhatWasDone: "Attempted connection setup", Blockers: []string{b1, b2}})
	if err != nil {
		return err
	}
	w.task = t
	return nil
}

func (w *world) taskIs(status trellis.Status) func() error {
	return func() error {
		ctx, cancel := ctxT()
		defer cancel()
		t, err := w.client.Show(ctx, w.task.TaskID)
		if err != nil {
			return err
		}
		if t.Status != status {
			return fmt.Errorf("task is %s; want %s", t.Status, status)
		}
		return nil
	}
}

func (w *world) checkpointBlockers(a, b, c string) error {
	md, err := w.checkpoint(w.task.TaskID)
	if err != nil {
		return err
	}
	_, section, ok := strings.Cut(md, "## Blockers/Errors\n\n")
	if !ok {
		return fmt.Errorf("no Blockers/Errors section:\n%s", md)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, want := range []string{a, b, c} {
		if !strings.Contains(section, "- "+want+"\n") {
			return fmt.Errorf("Blockers/Errors lacks %q:\n%s", want, section)
		}
	}
	return nil
}

func expectCode(err error, code trellis.Code) error {
	if trellis.ErrorCode(err) != code {
		return fmt.Errorf("got %v; want a %s error", err, code)
	}
	return nil
}

func (w *world) finishAgainConflict() error {
	ctx, cancel := ctxT()
	defer cancel()
	_, err := w.client.Done(ctx, trellis.DoneRequest{TaskID: w.task.TaskID, Worker: w.task.ClaimedBy, WhatWasDone: "again"})
	return expectCode(err, trellis.CodeConflict)
}

func (w *world) otherWorkerConflict(worker string) error {
	ctx, cancel := ctxT()
	defer cancel()
	_, err := w.client.Done(ctx, trellis.DoneRequest{TaskID: w.task.TaskID, Worker: worker, WhatWasDone: "not mine"})
	return expectCode(err, trellis.CodeConflict)
}

func (w *world) stillClaimedBy(worker string) error {
	ctx, cancel := ctxT()
	defer cancel()
	t, err := w.client.Show(ctx, w.task.TaskID)
	if err != nil {
		return err
	}
	if t.Status != trellis.StatusClaimed || t.ClaimedBy != worker {
		return fmt.Errorf("task is %s by %q; want claimed by %q", t.Status, t.ClaimedBy, worker)
	}
	return nil
}

func (w *world) finishesUsing(worker string, steps, calls int) error {
	ctx, cancel := ctxT()
	defer cancel()
	t, err := w.client.Done(ctx, trellis.DoneRequest{TaskID: w.task.TaskID, Worker: worker, WhatWasDone: "worked", StepsUsed: steps, ToolCallsUsed: calls})
	if err != nil {
		return err
	}
	w.task = t
	return nil
}

func (w *world) doneExhausted() error {
	if err := w.taskIs(trellis.StatusDone)(); err != nil {
		return err
	}
	if !w.task.BudgetExhausted || w.task.Checkpoint == nil || !w.task.Checkpoint.BudgetExhausted {
		return fmt.Errorf("task not marked budget exhausted: %+v", w.task)
	}
	return nil
}

func (w *world) checkpointExhausted() error {
	md, err := w.checkpoint(w.task.TaskID)
	if err != nil {
		return err
	}
	if !strings.Contains(md, "**Budget exhausted:** yes") || !strings.Contains(md, "- Budget exhausted\n") {
		return fmt.Errorf("checkpoint does not say the budget was exhausted:\n%s", md)
	}
	return nil
}

func (w *world) queuedInQueue(n int, queue string) error {
	ctx, cancel := ctxT()
	defer cancel()
	for i := 0; i < n; i++ {
		t, err := w.client.Add(ctx, trellis.AddTaskRequest{Queue: queue, Objective: fmt.Sprintf("item %d", i)})
		if err != nil {
			return err
		}
		w.ids = append(w.ids, t.TaskID)
	}
	return nil
}

func (w *world) workersDrain(workers int, queue string) error {
	ctx, cancel := ctxT()
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := 0; i < workers; i++ {
		// Each worker has its own connection, as a separate machine would.
		nc, err := nats.Connect(w.srv.Info().NATSURL)
		if err != nil {
			return err
		}
		defer nc.Close()
		client := natsapi.NewClient(nc, 0)
		worker := fmt.Sprintf("worker-%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				t, err := client.Next(ctx, trellis.NextRequest{Queue: queue, Worker: worker})
				if err != nil {
					errs <- err
					return
				}
				if t == nil {
					return
				}
				if _, err := client.Done(ctx, trellis.DoneRequest{TaskID: t.TaskID, Worker: worker, WhatWasDone: "processed"}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// eventCounts counts the queue events per task and type in the log.
func (w *world) eventCounts() (map[string]map[string]int, error) {
	ctx, cancel := ctxT()
	defer cancel()
	counts := map[string]map[string]int{}
	err := w.srv.Store().Read(ctx, events.StreamQueue, "", 0, func(r events.Recorded) error {
		if counts[r.AggregateID] == nil {
			counts[r.AggregateID] = map[string]int{}
		}
		counts[r.AggregateID][r.Type]++
		return nil
	})
	return counts, err
}

func (w *world) claimedExactlyOnce(n int) error {
	counts, err := w.eventCounts()
	if err != nil {
		return err
	}
	if len(w.ids) != n {
		return fmt.Errorf("%d tasks added; want %d", len(w.ids), n)
	}
	for _, id := range w.ids {
		if c := counts[id][events.TaskClaimed]; c != 1 {
			return fmt.Errorf("task %s claimed %d times", id, c)
		}
	}
	return w.tasksDone(n)
}

func (w *world) logOnePerTask() error {
	counts, err := w.eventCounts()
	if err != nil {
		return err
	}
	for _, id := range w.ids {
		if counts[id][events.TaskClaimed] != 1 || counts[id][events.TaskCompleted] != 1 {
			return fmt.Errorf("task %s has events %v", id, counts[id])
		}
	}
	return nil
}

func (w *world) mixedWorkload(n int) error {
	ctx, cancel := ctxT()
	defer cancel()
	var claimed []*trellis.Task
	for i := 0; i < n; i++ {
		switch i % 4 {
		case 0, 1:
			if _, err := w.client.Add(ctx, trellis.AddTaskRequest{Objective: fmt.Sprintf("op %d", i), Queue: []string{"a", "b"}[i%3%2]}); err != nil {
				return err
			}
		case 2:
			t, err := w.client.Next(ctx, trellis.NextRequest{Queue: []string{"a", "b"}[i%2], Worker: "mixer"})
			if err != nil {
				return err
			}
			if t != nil {
				claimed = append(claimed, t)
			}
		case 3:
			if len(claimed) == 0 {
				continue
			}
			t := claimed[0]
			claimed = claimed[1:]
			var err error
			if i%8 == 3 {
				_, err = w.client.Fail(ctx, trellis.FailRequest{TaskID: t.TaskID, Worker: "mixer", Error: "flaky", Blockers: []string{"network"}})
			} else {
				_, err = w.client.Done(ctx, trellis.DoneRequest{TaskID: t.TaskID, Worker: "mixer", WhatWasDone: "ok", StepsUsed: i % 13})
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *world) readCheckpoints() (map[string]string, error) {
	out := map[string]string{}
	dir := w.srv.Service().Checkpoints().Dir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[e.Name()] = string(data)
	}
	return out, nil
}

func (w *world) remember() error {
	if err := w.catchUp(); err != nil {
		return err
	}
	w.saved = w.srv.Service().Board().Tasks()
	var err error
	w.files, err = w.readCheckpoints()
	if len(w.saved) == 0 || len(w.files) == 0 {
		return errors.New("workload left no tasks or no checkpoints")
	}
	return err
}

func (w *world) replay() error {
	ctx, cancel := ctxT()
	defer cancel()
	_, err := w.client.Replay(ctx)
	return err
}

func (w *world) boardSame() error {
	if got := w.srv.Service().Board().Tasks(); !reflect.DeepEqual(got, w.saved) {
		return fmt.Errorf("rebuilt board (%d tasks) differs from the live one (%d tasks)", len(got), len(w.saved))
	}
	return nil
}

func (w *world) filesSame() error {
	got, err := w.readCheckpoints()
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(got, w.files) {
		return fmt.Errorf("rebuilt checkpoints (%d files) differ from the live ones (%d files)", len(got), len(w.files))
	}
	return nil
}

func (w *world) auditLists(list string) error {
	ctx, cancel := ctxT()
	defer cancel()
	recs, err := w.srv.Service().Audit(ctx, w.task.TaskID)
	if err != nil {
		return err
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Type)
	}
	if strings.Join(got, ", ") != list {
		return fmt.Errorf("audit lists %q; want %q", strings.Join(got, ", "), list)
	}
	return nil
}

func (w *world) auditActors(actor string) error {
	ctx, cancel := ctxT()
	defer cancel()
	recs, err := w.srv.Service().Audit(ctx, w.task.TaskID)
	if err != nil {
		return err
	}
	for _, r := range recs[1:] {
		if r.Actor != actor {
			return fmt.Errorf("event %s has actor %q; want %q", r.Type, r.Actor, actor)
		}
	}
	return nil
}
