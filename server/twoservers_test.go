package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/server"
)

// Two Trellis servers on one NATS: tasks added through one, claimed
// through the other and finished through either over HTTP. Every finish
// must succeed: each server decides from the log, not from what it last
// cached (the fault trial refused 23 of 56 such finishes).
func TestTwoServersCrossClaimAndFinish(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := server.Start(ctx, server.Config{DataDir: t.TempDir(), NATSAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", SyncInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := server.Start(ctx, server.Config{DataDir: t.TempDir(), NATSURL: a.Info().NATSURL, HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	urls := []string{a.Info().HTTPURL, b.Info().HTTPURL}

	post := func(url string, body any, out any) (int, string) {
		t.Helper()
		data, _ := json.Marshal(body)
		resp, err := http.Post(url, "application/json", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var raw json.RawMessage
		_ = json.NewDecoder(resp.Body).Decode(&raw)
		if out != nil && resp.StatusCode < 300 {
			if err := json.Unmarshal(raw, out); err != nil {
				t.Fatalf("decode %s: %v", raw, err)
			}
		}
		return resp.StatusCode, string(raw)
	}

	const n = 24
	for i := 0; i < n; i++ {
		var task trellis.Task
		if code, body := post(urls[i%2]+"/v1/queue/tasks", map[string]any{"objective": fmt.Sprintf("task %d", i), "queue": "cross"}, &task); code != http.StatusCreated {
			t.Fatalf("add: %d %s", code, body)
		}
	}
	for i := 0; i < n; i++ {
		worker := fmt.Sprintf("w%d", i%3)
		// Claim through one server, finish through the other.
		claimVia, finishVia := urls[(i+1)%2], urls[i%2]
		var task *trellis.Task
		if code, body := post(claimVia+"/v1/queue/next", map[string]any{"queue": "cross", "worker": worker}, &task); code != http.StatusOK || task == nil {
			t.Fatalf("next: %d %s", code, body)
		}
		var finished trellis.Task
		var code int
		var body string
		if i%4 == 3 {
			code, body = post(finishVia+"/v1/queue/tasks/"+task.TaskID+"/fail", map[string]any{"worker": worker, "error": "failed on purpose"}, &finished)
		} else {
			code, body = post(finishVia+"/v1/queue/tasks/"+task.TaskID+"/done", map[string]any{"worker": worker, "what_was_done": "done"}, &finished)
		}
		if code != http.StatusOK {
			t.Fatalf("finish %d of task %s through the other server: %d %s", i, task.TaskID, code, body)
		}
		if !finished.Status.Terminal() {
			t.Fatalf("finished task is %s", finished.Status)
		}
	}
	list, err := a.Service().List(ctx, trellis.ListRequest{Queue: "cross"})
	if err != nil {
		t.Fatal(err)
	}
	if c := list.Counts["cross"]; c[trellis.StatusDone] != 18 || c[trellis.StatusFailed] != 6 {
		t.Fatalf("counts = %v, want 18 done and 6 failed", c)
	}
}
