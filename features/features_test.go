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
	"github.com/trellis/trellis/client"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/server"
	"github.com/trellis/trellis/steps"
)

func TestFeatures(t *testing.T) {
	bin, err := trellisBinary()
	if err != nil {
		t.Fatal(err)
	}
	// examples/ runs through `trellis features run` (cmd/trellis).
	paths, err := filepath.Glob("*.feature")
	if err != nil {
		t.Fatal(err)
	}
	suite := godog.TestSuite{
		Name:                "trellis",
		ScenarioInitializer: func(sc *godog.ScenarioContext) { initScenario(sc, suiteConfig(bin)) },
		Options: &godog.Options{
			Format:   "pretty",
			Paths:    paths,
			Strict:   true,
			TestingT: t,
		},
	}
	if suite.Run() != 0 {
		t.Fatal("feature scenarios failed")
	}
}

// world is one scenario's state besides the steps package's.
type world struct {
	sw     *steps.World
	nc     *nats.Conn
	client *client.API
	files  map[string]string
	rounds [][]string
}

func initScenario(sc *godog.ScenarioContext, cfg steps.Config) {
	w := &world{}
	w.sw = steps.Register(sc, cfg)
	// Our connection closes before the scenario's server stops.
	w.sw.OnClose(w.close)
	vineSteps(sc, w)
	memorySteps(sc, w)
	codeSteps(sc, w)
	workerSteps(sc, w)
	sc.Step(`^I add (\d+) tasks "([^"]*)" with a budget of (\d+) tool calls and (\d+) steps$`, w.addNumbered)
	sc.Step(`^a worker "([^"]*)" runs the loop (\d+) times: take the next task, then finish it with "([^"]*)" and next step "([^"]*)"$`, w.workerLoop)
	sc.Step(`^every done task has a Markdown checkpoint with every checkpoint section$`, w.checkpointsHaveSections)
	sc.Step(`^worker "([^"]*)" fails it with error "([^"]*)" and blockers "([^"]*)" and "([^"]*)"$`, w.failsWith)
	sc.Step(`^its checkpoint lists "([^"]*)", "([^"]*)" and "([^"]*)" under Blockers/Errors$`, w.checkpointBlockers)
	sc.Step(`^its checkpoint file says the budget was exhausted$`, w.checkpointExhausted)
	sc.Step(`^(\d+) workers claim and complete tasks from queue "([^"]*)" until it is empty, each on its own connection$`, w.workersDrain)
	sc.Step(`^a mixed workload of (\d+) operations has run$`, w.mixedWorkload)
	sc.Step(`^I remember the checkpoint files$`, w.remember)
	sc.Step(`^the checkpoint files are the same as before$`, w.filesSame)
}

func ctxT() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*time.Minute)
}

// srv returns the scenario's server (started by "Given a Trellis server").
func (w *world) srv() *server.Server { return w.sw.Server() }

// runningServerWith starts the scenario's server with code-memory models
// (embedding and chat endpoints).
func (w *world) runningServerWith(code codememory.Config) error {
	ctx, cancel := ctxT()
	defer cancel()
	return w.sw.StartServer(ctx, func(c *server.Config) { c.Code = code })
}

// cl returns a client over NATS, as workers on another machine would use.
func (w *world) cl() (*client.API, error) {
	if w.client != nil {
		return w.client, nil
	}
	if w.srv() == nil {
		return nil, errors.New(`no server: start with "Given a Trellis server"`)
	}
	nc, err := nats.Connect(w.srv().Info().NATSURL)
	if err != nil {
		return nil, err
	}
	w.nc, w.client = nc, client.NewAPI(nc, 0)
	return w.client, nil
}

func (w *world) close() {
	if w.nc != nil {
		w.nc.Close()
	}
}

func (w *world) addNumbered(n int, pattern string, calls, steps int) error {
	c, err := w.cl()
	if err != nil {
		return err
	}
	ctx, cancel := ctxT()
	defer cancel()
	for i := 1; i <= n; i++ {
		t, err := c.Add(ctx, trellis.AddTaskRequest{Objective: strings.ReplaceAll(pattern, "N", fmt.Sprint(i)), MaxToolCalls: calls, MaxSteps: steps})
		if err != nil {
			return err
		}
		w.sw.SetTask(t)
	}
	return nil
}

func (w *world) workerLoop(worker string, n int, done, next string) error {
	c, err := w.cl()
	if err != nil {
		return err
	}
	ctx, cancel := ctxT()
	defer cancel()
	for i := 0; i < n; i++ {
		t, err := c.Next(ctx, trellis.NextRequest{Worker: worker})
		if err != nil {
			return err
		}
		if t == nil {
			return fmt.Errorf("iteration %d: no task", i+1)
		}
		if want := fmt.Sprintf("Process batch %d", i+1); t.Objective != want {
			return fmt.Errorf("iteration %d took %q; want the oldest, %q", i+1, t.Objective, want)
		}
		if _, err := c.Done(ctx, trellis.DoneRequest{TaskID: t.TaskID, Worker: worker, WhatWasDone: done, WhatNext: next}); err != nil {
			return err
		}
	}
	return nil
}

func (w *world) catchUp() error {
	ctx, cancel := ctxT()
	defer cancel()
	return w.srv().Service().CatchUp(ctx)
}

func (w *world) checkpoint(id string) (string, error) {
	if err := w.catchUp(); err != nil {
		return "", err
	}
	data, err := os.ReadFile(filepath.Join(w.srv().Service().Checkpoints().Dir(), id+".md"))
	return string(data), err
}

func (w *world) checkpointsHaveSections() error {
	ctx, cancel := ctxT()
	defer cancel()
	l, err := w.sw.Queue().List(ctx, trellis.ListRequest{Status: trellis.StatusDone, Limit: trellis.MaxListLimit})
	if err != nil {
		return err
	}
	if len(l.Tasks) == 0 {
		return errors.New("no task is done")
	}
	for _, r := range l.Tasks {
		md, err := w.checkpoint(r.TaskID)
		if err != nil {
			return err
		}
		for _, h := range []string{"# Checkpoint: " + r.TaskID, "**Created:**", "## What Was Done\n\nBatch processed", "## What Changed", "## What's Next\n\nNext batch", "## Blockers/Errors\n\n- None", "## Citations Used"} {
			if !strings.Contains(md, h) {
				return fmt.Errorf("checkpoint of %s lacks %q:\n%s", r.TaskID, h, md)
			}
		}
	}
	return nil
}

func (w *world) failsWith(worker, msg, b1, b2 string) error {
	task := w.sw.Task()
	if task == nil {
		return errors.New("no task")
	}
	ctx, cancel := ctxT()
	defer cancel()
	t, err := w.sw.Queue().Fail(ctx, trellis.FailRequest{TaskID: task.TaskID, Worker: worker, Error: msg, WhatWasDone: "Attempted connection setup", Blockers: []string{b1, b2}})
	if err != nil {
		return err
	}
	w.sw.SetTask(t)
	return nil
}

func (w *world) checkpointBlockers(a, b, c string) error {
	md, err := w.checkpoint(w.sw.Task().TaskID)
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

func (w *world) checkpointExhausted() error {
	md, err := w.checkpoint(w.sw.Task().TaskID)
	if err != nil {
		return err
	}
	if !strings.Contains(md, "**Budget exhausted:** yes") || !strings.Contains(md, "- Budget exhausted\n") {
		return fmt.Errorf("checkpoint does not say the budget was exhausted:\n%s", md)
	}
	return nil
}

func (w *world) workersDrain(workers int, queue string) error {
	if w.srv() == nil {
		return errors.New("no server")
	}
	ctx, cancel := ctxT()
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := 0; i < workers; i++ {
		// Each worker has its own connection, as a separate machine would.
		nc, err := nats.Connect(w.srv().Info().NATSURL)
		if err != nil {
			return err
		}
		defer nc.Close()
		client := client.NewAPI(nc, 0)
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

func (w *world) mixedWorkload(n int) error {
	c, err := w.cl()
	if err != nil {
		return err
	}
	ctx, cancel := ctxT()
	defer cancel()
	var claimed []*trellis.Task
	for i := 0; i < n; i++ {
		switch i % 4 {
		case 0, 1:
			if _, err := c.Add(ctx, trellis.AddTaskRequest{Objective: fmt.Sprintf("op %d", i), Queue: []string{"a", "b"}[i%3%2]}); err != nil {
				return err
			}
		case 2:
			t, err := c.Next(ctx, trellis.NextRequest{Queue: []string{"a", "b"}[i%2], Worker: "mixer"})
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
				_, err = c.Fail(ctx, trellis.FailRequest{TaskID: t.TaskID, Worker: "mixer", Error: "flaky", Blockers: []string{"network"}})
			} else {
				_, err = c.Done(ctx, trellis.DoneRequest{TaskID: t.TaskID, Worker: "mixer", WhatWasDone: "ok", StepsUsed: i % 13})
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
	dir := w.srv().Service().Checkpoints().Dir()
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
	var err error
	w.files, err = w.readCheckpoints()
	if len(w.files) == 0 {
		return errors.New("the workload left no checkpoints")
	}
	return err
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

// eventCounts counts the queue events per task and type in the log.
func (w *world) eventCounts() (map[string]map[string]int, error) {
	ctx, cancel := ctxT()
	defer cancel()
	counts := map[string]map[string]int{}
	err := w.srv().Store().Read(ctx, events.StreamQueue, "", 0, func(r events.Recorded) error {
		if counts[r.AggregateID] == nil {
			counts[r.AggregateID] = map[string]int{}
		}
		counts[r.AggregateID][r.Type]++
		return nil
	})
	return counts, err
}
