package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/internal/servicetest"
	"github.com/trellis/trellis/server"
)

// logBuffer is a log destination safe for concurrent writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitUntil polls cond until it holds, failing after 90 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cancelledTasks adds n tasks to queue and cancels them.
func cancelledTasks(t *testing.T, ctx context.Context, srv *server.Server, queue string, n int) []string {
	t.Helper()
	svc := srv.Service()
	var ids []string
	for i := 0; i < n; i++ {
		task, err := svc.Add(ctx, trellis.AddTaskRequest{Queue: queue, Objective: fmt.Sprintf("finished %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.QueueHandler().Cancel(ctx, trellis.CancelRequest{TaskID: task.TaskID, Reason: "done with it"}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.TaskID)
	}
	return ids
}

// verifyKeyed runs audit verify with the data directory's audit key (as
// `trellis audit verify --data` does) and returns the findings.
func verifyKeyed(t *testing.T, ctx context.Context, store *events.Store, dataDir string) []audit.Finding {
	t.Helper()
	key, err := audit.AnchorKey(dataDir, false)
	if err != nil {
		t.Fatal(err)
	}
	var fs []audit.Finding
	if _, err := audit.Verify(ctx, store, audit.VerifyOptions{AnchorKey: key}, func(f audit.Finding) error { fs = append(fs, f); return nil }); err != nil {
		t.Fatal(err)
	}
	return fs
}

// TestServeRetentionArchiveFails: a server pruning every 200 ms whose
// archive directory stops taking files (replaced by a file) prunes
// nothing: each prune fails, the error is logged, trellis_retention_failing
// is 1 and prunes_total{result="error"} counts, and every finished task
// stays whole in the log. Once the directory is back, the next prune
// archives and removes them all; audit verify (with the server's key) is
// OK and the archives verify.
func TestServeRetentionArchiveFails(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data := t.TempDir()
	archive := filepath.Join(t.TempDir(), "archive")
	logs := &logBuffer{}
	srv, err := server.Start(ctx, server.Config{DataDir: data, NATSAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", SyncInterval: time.Second,
		Retention: time.Millisecond, Archive: archive, PruneEvery: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := srv.Info().HTTPURL
	status := func() (s struct{ runs, failed, tasks int }) {
		st, ok := srv.Retention()
		if !ok {
			t.Fatal("the server has no retention loop")
		}
		s.runs, s.failed, s.tasks = st.Runs, st.Failed, st.Tasks
		return s
	}
	waitUntil(t, "a first prune", func() bool { return status().runs >= 1 })
	if servicetest.Metric(t, url, "trellis_retention_failing") != 0 || servicetest.Metric(t, url, `trellis_retention_prunes_total{result="ok"}`) < 1 {
		t.Fatal("a prune of an empty log did not succeed")
	}

	// The archive directory goes; a file takes its name. (A prune
	// between the two creates the directory again: then again.)
	for {
		if err := os.RemoveAll(archive); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(archive, []byte("not a directory"), 0o600); err == nil {
			break
		}
	}
	ids := cancelledTasks(t, ctx, srv, "broken-archive", 12)
	failedBefore := status().failed
	waitUntil(t, "two failed prunes after the tasks finished", func() bool { return status().failed >= failedBefore+2 })
	if st := status(); st.tasks != 0 {
		t.Fatalf("%d task(s) pruned without an archive", st.tasks)
	}
	if v := servicetest.Metric(t, url, "trellis_retention_failing"); v != 1 {
		t.Fatalf("trellis_retention_failing = %v while prunes fail", v)
	}
	if v := servicetest.Metric(t, url, `trellis_retention_prunes_total{result="error"}`); v < 2 {
		t.Fatalf(`prunes_total{result="error"} = %v`, v)
	}
	if l := logs.String(); !strings.Contains(l, "retention: prune failed") || !strings.Contains(l, "is a file, not a directory") {
		t.Fatalf("the failure is not logged:\n%s", l)
	}
	st, _ := srv.Retention()
	if !strings.Contains(st.LastErr, "archive") {
		t.Fatalf("last error %q does not name the archive", st.LastErr)
	}
	recs, _, err := srv.Store().Load(ctx, events.StreamQueue, events.RetentionFilter)
	if err != nil && !errors.Is(err, events.ErrNotFound) {
		t.Fatal(err)
	}
	if len(recs) != 0 {
		t.Fatalf("%d prune record(s) appended without an archive", len(recs))
	}
	for _, id := range ids {
		if task, err := srv.Service().Show(ctx, id); err != nil || task.Status != trellis.StatusCancelled {
			t.Fatalf("task %s after failed prunes: %+v %v", id, task, err)
		}
	}

	// The directory is back: the next prune takes every finished task.
	if err := os.Remove(archive); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(archive, 0o750); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "every finished task pruned", func() bool { return status().tasks == len(ids) })
	if v := servicetest.Metric(t, url, "trellis_retention_failing"); v != 0 {
		t.Fatalf("trellis_retention_failing = %v after a prune succeeded", v)
	}
	if v := servicetest.Metric(t, url, "trellis_retention_pruned_tasks_total"); v != float64(len(ids)) {
		t.Fatalf("pruned_tasks_total = %v; want %d", v, len(ids))
	}
	for _, id := range ids {
		if _, err := srv.Service().Show(ctx, id); trellis.ErrorCode(err) != trellis.CodeNotFound {
			t.Fatalf("task %s after the prune: %v; want not_found", id, err)
		}
	}
	if fs := verifyKeyed(t, ctx, srv.Store(), data); len(fs) > 0 {
		t.Fatalf("audit verify after the prune: %v", fs)
	}
	files, _ := filepath.Glob(filepath.Join(archive, "prune-*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no archive written")
	}
	for _, f := range files {
		var fs []audit.Finding
		if _, err := audit.VerifyFile(ctx, f, func(x audit.Finding) error { fs = append(fs, x); return nil }); err != nil || len(fs) > 0 {
			t.Fatalf("archive %s: %v %v", f, err, fs)
		}
	}
}

// copyKey gives data directory to the audit key of from (servers pruning
// one log hold one key).
func copyKey(from, to string) error {
	raw, err := os.ReadFile(audit.AnchorKeyPath(from))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(audit.AnchorKeyPath(to)), 0o700); err != nil {
		return err
	}
	return os.WriteFile(audit.AnchorKeyPath(to), raw, 0o600)
}
