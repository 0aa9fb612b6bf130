package projections_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// TestHostileEventsWriteNothingOutsideTheDataDir: events published straight
// onto the queue stream (no API in between) whose aggregate ids are paths
// ("../../pwned", an absolute path, a name with a separator) are finished
// tasks the checkpoint projection would render. Nothing may be written
// outside the checkpoint directory; the projection skips them and goes on
// (a real task finished afterwards still gets its checkpoint).
func TestHostileEventsWriteNothingOutsideTheDataDir(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	outside := filepath.Dir(b.dataDir) // the data dir's parent: where "../pwned" lands
	hostile := []string{"../../pwned", "../pwned", "/tmp/pwned-" + filepath.Base(b.dataDir), "a/../../pwned2", `..\pwned3`, ".."}
	for _, id := range hostile {
		for _, typ := range []string{taskqueue.Completed, taskqueue.Failed, taskqueue.Dead} {
			env, err := events.NewEnvelope(time.Now(), typ, id, "intruder", 1, map[string]any{"worker": "x", "what_was_done": "pwned", "error": "e"})
			if err != nil {
				t.Fatal(err)
			}
			data, err := json.Marshal(env)
			if err != nil {
				t.Fatal(err)
			}
			// The subject token is harmless; the envelope's aggregate id is not.
			if _, err := b.Store.JetStream().Publish(ctx, "trellis.queue.default.hostile."+typ, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	task, err := b.svc.Add(ctx, trellis.AddTaskRequest{Objective: "honest"})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := b.svc.Next(ctx, trellis.NextRequest{Worker: "w1"})
	if err != nil || claimed == nil {
		t.Fatalf("next: %v %v", claimed, err)
	}
	if _, err := b.svc.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: "w1", WhatWasDone: "ok"}); err != nil {
		t.Fatal(err)
	}
	if err := b.svc.CatchUp(ctx); err != nil {
		t.Fatalf("projections stopped on hostile events: %v", err)
	}
	if _, err := os.Stat(b.svc.Checkpoints().Path(task.TaskID)); err != nil {
		t.Fatalf("the honest task's checkpoint is missing: %v", err)
	}
	for _, p := range []string{
		filepath.Join(outside, "pwned.md"), filepath.Join(b.dataDir, "pwned.md"), filepath.Join(filepath.Dir(outside), "pwned.md"),
		"/tmp/pwned-" + filepath.Base(b.dataDir) + ".md", filepath.Join(outside, "pwned2.md"), filepath.Join(b.dataDir, "..md"),
	} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("hostile event wrote %s", p)
		}
	}
	// Only the honest checkpoint (and nothing in a subdirectory) exists.
	var files []string
	_ = filepath.Walk(b.svc.Checkpoints().Dir(), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			files = append(files, strings.TrimPrefix(p, b.svc.Checkpoints().Dir()))
		}
		return nil
	})
	if len(files) != 1 || files[0] != "/"+task.TaskID+".md" {
		t.Fatalf("checkpoint dir holds %v, want only the honest task's checkpoint", files)
	}
}
