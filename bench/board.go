package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/projections"
	"github.com/trellis/trellis/taskqueue"
)

// BoardConfig sizes the board benchmark.
type BoardConfig struct {
	// Tasks on the board (default 1,000,000): every task is added, half
	// are claimed, a quarter completed (1.75 events per task).
	Tasks int
	// Queues the tasks are spread over (default 4).
	Queues int
	// WriteRate is the offered rate of the live-writes phase in events/s
	// (default 5000); WriteSeconds its length (default 5).
	WriteRate    int
	WriteSeconds float64
	// LegacyTasks sizes the comparison with the former JSON board (every
	// task in a map, the whole board rewritten as one JSON snapshot per
	// save); default min(Tasks, 100,000), negative skips it.
	LegacyTasks int
	// Dir holds the board files (default a temporary directory, removed
	// afterwards).
	Dir string
	// Progress, when set, receives one line per phase.
	Progress io.Writer
}

func (c BoardConfig) withDefaults() BoardConfig {
	if c.Tasks <= 0 {
		c.Tasks = 1_000_000
	}
	if c.Queues <= 0 {
		c.Queues = 4
	}
	if c.WriteRate <= 0 {
		c.WriteRate = 5000
	}
	if c.WriteSeconds <= 0 {
		c.WriteSeconds = 5
	}
	if c.LegacyTasks == 0 {
		c.LegacyTasks = min(c.Tasks, 100_000)
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c
}

// BoardReport is the result of RunBoard.
type BoardReport struct {
	Tasks  int    `json:"tasks"`
	Events uint64 `json:"events"`
	// Generation of the log (not the projection's cost).
	GenerateSeconds float64 `json:"generate_seconds"`
	// Rebuild by replay into an empty board: every event folded and
	// committed in batches, the last commit included.
	ReplaySeconds      float64 `json:"replay_seconds"`
	ReplayEventsPerSec float64 `json:"replay_events_per_sec"`
	ReplayCommits      int     `json:"replay_commits"`
	ReplayCommitSecs   float64 `json:"replay_commit_seconds"`
	BoardFileMB        float64 `json:"board_file_mb"`
	// Memory after the replay (after a GC): the Go heap in use before and
	// after, and the process's resident set (which includes the embedded
	// NATS server that holds the log) split into anonymous and file-backed
	// (the board's memory-mapped pages) parts.
	HeapBeforeMB float64 `json:"heap_before_mb"`
	HeapAfterMB  float64 `json:"heap_after_mb"`
	RSSMB        float64 `json:"rss_mb"`
	RSSAnonMB    float64 `json:"rss_anon_mb"`
	RSSFileMB    float64 `json:"rss_file_mb"`
	// Reopening the board (a restart): Load's time.
	ReopenMs float64 `json:"reopen_ms"`
	// List latency of one page of 100 rows, per kind of request.
	List []ListLatency `json:"list"`
	// Live writes at an offered rate while the board keeps up.
	WriteRate         int     `json:"write_rate_offered"`
	WriteEvents       int     `json:"write_events"`
	WriteCommits      int     `json:"write_commits"`
	WriteCommitMeanMs float64 `json:"write_commit_mean_ms"`
	// CommitMsPerSec is the time spent committing per second of writes:
	// what persisting costs while tasks change.
	CommitMsPerSec float64 `json:"commit_ms_per_sec"`
	// The former JSON board at LegacyTasks tasks.
	LegacyTasks      int     `json:"legacy_tasks"`
	LegacyHeapMB     float64 `json:"legacy_heap_mb"`
	LegacySnapshotMs float64 `json:"legacy_snapshot_ms"`
	LegacySnapshotMB float64 `json:"legacy_snapshot_mb"`
}

// ListLatency is the latency of one kind of page.
type ListLatency struct {
	Name  string  `json:"name"`
	Rows  int     `json:"rows"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
}

// Print writes the report as a table.
func (r *BoardReport) Print(w io.Writer) {
	fmt.Fprintf(w, "board benchmark: %d tasks, %d events (generated in %.1f s, not part of the measurement)\n", r.Tasks, r.Events, r.GenerateSeconds)
	fmt.Fprintf(w, "  rebuild by replay      %8.1f s   %9.0f events/s, %d commits taking %.1f s, board.db %.0f MB\n",
		r.ReplaySeconds, r.ReplayEventsPerSec, r.ReplayCommits, r.ReplayCommitSecs, r.BoardFileMB)
	fmt.Fprintf(w, "  memory after load      Go heap %.0f MB (%.0f MB before the board); process RSS %.0f MB = anon %.0f + file-backed %.0f (RSS includes the embedded NATS server)\n",
		r.HeapAfterMB, r.HeapBeforeMB, r.RSSMB, r.RSSAnonMB, r.RSSFileMB)
	fmt.Fprintf(w, "  reopen (restart)       %8.2f ms\n", r.ReopenMs)
	for _, l := range r.List {
		fmt.Fprintf(w, "  list %-28s p50 %6.2f ms  p99 %6.2f ms  (%d rows)\n", l.Name, l.P50Ms, l.P99Ms, l.Rows)
	}
	fmt.Fprintf(w, "  live writes            %d events at %d/s offered: %d commits, %.2f ms each, %.1f ms of commit per second of writes\n",
		r.WriteEvents, r.WriteRate, r.WriteCommits, r.WriteCommitMeanMs, r.CommitMsPerSec)
	if r.LegacyTasks > 0 {
		fmt.Fprintf(w, "  former JSON board at %d tasks: heap %.0f MB, one snapshot %.0f ms (%.0f MB), rewritten every second while tasks change\n",
			r.LegacyTasks, r.LegacyHeapMB, r.LegacySnapshotMs, r.LegacySnapshotMB)
	}
}

// timedBoard records the time of each commit.
type timedBoard struct {
	*projections.Board
	mu      sync.Mutex
	commits int
	spent   time.Duration
}

func (t *timedBoard) Save(seq uint64) error {
	start := time.Now()
	err := t.Board.Save(seq)
	t.mu.Lock()
	t.commits++
	t.spent += time.Since(start)
	t.mu.Unlock()
	return err
}

func (t *timedBoard) take() (int, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, d := t.commits, t.spent
	t.commits, t.spent = 0, 0
	return n, d
}

// RunBoard writes a queue log of cfg.Tasks tasks straight to the stream
// (asynchronous publishes of the events the queue handler writes, without
// its concurrency checks: generating the log is not what is measured),
// then measures the board built from it.
func RunBoard(ctx context.Context, store *events.Store, cfg BoardConfig) (*BoardReport, error) {
	cfg = cfg.withDefaults()
	rep := &BoardReport{Tasks: cfg.Tasks, WriteRate: cfg.WriteRate}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "trellis-bench-board-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}

	start := time.Now()
	queued, since, err := generateBoardLog(ctx, store, cfg, cfg.WriteRate*int(cfg.WriteSeconds+1))
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	rep.GenerateSeconds = time.Since(start).Seconds()
	if rep.Events, err = store.LastSeq(ctx, events.StreamQueue); err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Progress, "generated %d events in %.1f s\n", rep.Events, rep.GenerateSeconds)

	rep.HeapBeforeMB = heapMB()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	tb := &timedBoard{Board: projections.NewBoard(dir)}
	runner := projections.NewRunner(store, tb, quiet)
	start = time.Now()
	if err := runner.Start(ctx); err != nil {
		return nil, err
	}
	if err := runner.CatchUp(ctx); err != nil {
		return nil, err
	}
	if err := runner.Save(); err != nil {
		return nil, err
	}
	rep.ReplaySeconds = time.Since(start).Seconds()
	rep.ReplayEventsPerSec = float64(rep.Events) / rep.ReplaySeconds
	var spent time.Duration
	rep.ReplayCommits, spent = tb.take()
	rep.ReplayCommitSecs = spent.Seconds()
	if st, err := os.Stat(tb.Path()); err == nil {
		rep.BoardFileMB = float64(st.Size()) / (1 << 20)
	}
	fmt.Fprintf(cfg.Progress, "replayed in %.1f s\n", rep.ReplaySeconds)
	if err := checkCounts(tb.Board, cfg.Tasks); err != nil {
		return nil, err
	}
	rep.HeapAfterMB = heapMB()
	rep.RSSMB, rep.RSSAnonMB, rep.RSSFileMB = rss()

	if rep.List, err = listLatencies(tb.Board, queued, since); err != nil {
		return nil, err
	}

	n, err := liveWrites(ctx, store, runner, cfg, queued)
	if err != nil {
		return nil, fmt.Errorf("live writes: %w", err)
	}
	rep.WriteEvents = n
	commits, spent := tb.take()
	rep.WriteCommits = commits
	if commits > 0 {
		rep.WriteCommitMeanMs = float64(spent.Microseconds()) / 1000 / float64(commits)
	}
	rep.CommitMsPerSec = float64(spent.Microseconds()) / 1000 / cfg.WriteSeconds
	fmt.Fprintf(cfg.Progress, "live writes: %d events, %d commits\n", n, commits)

	if err := runner.Stop(); err != nil {
		return nil, err
	}
	if err := tb.Close(); err != nil {
		return nil, err
	}
	reopened := projections.NewBoard(dir)
	start = time.Now()
	if _, err := reopened.Load(); err != nil {
		return nil, err
	}
	rep.ReopenMs = float64(time.Since(start).Microseconds()) / 1000
	_ = reopened.Close()

	if cfg.LegacyTasks > 0 {
		if err := legacyBoard(ctx, store, cfg, dir, rep); err != nil {
			return nil, fmt.Errorf("legacy board: %w", err)
		}
	}
	return rep, nil
}

// queuedTask is a task the generated log leaves queued.
type queuedTask struct{ id, queue string }

// generateBoardLog publishes the log and returns up to keep tasks left
// queued (for the live-writes phase and list cursors) and the time the
// last phase (completions of a quarter of the tasks) began.
func generateBoardLog(ctx context.Context, store *events.Store, cfg BoardConfig, keep int) ([]queuedTask, time.Time, error) {
	js := store.JetStream()
	ids := make([]string, cfg.Tasks)
	queueOf := func(i int) string { return "q" + strconv.Itoa(i%cfg.Queues) }
	publish := func(i int, typ string, payload any) error {
		env, err := events.NewEnvelope(time.Now(), typ, ids[i], "bench", taskqueue.Schema, payload)
		if err != nil {
			return err
		}
		data, err := json.Marshal(env)
		if err != nil {
			return err
		}
		for {
			_, err = js.PublishAsync(taskqueue.Subject(queueOf(i), ids[i], typ), data)
			if err == nil {
				return nil
			}
			// Too many in flight: wait for acknowledgements.
			select {
			case <-js.PublishAsyncComplete():
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	phases := []struct {
		typ     string
		every   int
		payload func(i int) any
	}{
		{taskqueue.Added, 1, func(i int) any {
			return taskqueue.AddedPayload{Queue: queueOf(i), Objective: fmt.Sprintf("bench task %d: refactor the module and keep every test green", i),
				Inputs: []string{"src/module.go"}, Budget: trellis.Budget{MaxToolCalls: 20, MaxSteps: 10}, MaxAttempts: 3}
		}},
		{taskqueue.Claimed, 2, func(int) any { return taskqueue.ClaimedPayload{Worker: "bench-worker", Attempt: 1} }},
		{taskqueue.Completed, 4, func(int) any {
			return taskqueue.CompletedPayload{Worker: "bench-worker", WhatWasDone: "done", WhatChanged: []string{"src/module.go"}}
		}},
	}
	var lastPhase time.Time
	for _, ph := range phases {
		lastPhase = time.Now()
		for i := 0; i < cfg.Tasks; i++ {
			if ph.typ == taskqueue.Added {
				ids[i] = events.NewID(time.Now())
			}
			if i%ph.every != 0 {
				continue
			}
			if err := publish(i, ph.typ, ph.payload(i)); err != nil {
				return nil, lastPhase, err
			}
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-ctx.Done():
			return nil, lastPhase, ctx.Err()
		}
	}
	var queued []queuedTask
	for i := 1; i < cfg.Tasks && len(queued) < keep; i += 2 {
		queued = append(queued, queuedTask{ids[i], queueOf(i)})
	}
	return queued, lastPhase, nil
}

// checkCounts verifies the board counts every task once.
func checkCounts(b *projections.Board, tasks int) error {
	total := 0
	for _, m := range b.Counts() {
		for _, n := range m {
			total += n
		}
	}
	if total != tasks {
		return fmt.Errorf("board counts %d tasks; %d were added", total, tasks)
	}
	return nil
}

// listLatencies times pages of the default size.
func listLatencies(b *projections.Board, queued []queuedTask, sinceTime time.Time) ([]ListLatency, error) {
	mid := ""
	if len(queued) > 0 {
		mid = trellis.EncodeCursor(queued[len(queued)/2].id)
	}
	since := sinceTime.UTC().Format(time.RFC3339Nano)
	kinds := []struct {
		name string
		req  trellis.ListRequest
	}{
		{"first page", trellis.ListRequest{}},
		{"page after a cursor", trellis.ListRequest{Cursor: mid}},
		{"status=queued", trellis.ListRequest{Status: trellis.StatusQueued}},
		{"queue=q0 status=done", trellis.ListRequest{Queue: "q0", Status: trellis.StatusDone}},
		{"since (1 task in 4 matches)", trellis.ListRequest{Since: since}},
	}
	var out []ListLatency
	for _, k := range kinds {
		req := k.req
		if err := req.Normalize(); err != nil {
			return nil, err
		}
		const runs = 200
		times := make([]time.Duration, 0, runs)
		rows := 0
		for i := 0; i < runs; i++ {
			start := time.Now()
			l, err := b.List(req)
			if err != nil {
				return nil, err
			}
			times = append(times, time.Since(start))
			rows = len(l.Tasks)
		}
		slices.Sort(times)
		out = append(out, ListLatency{Name: k.name, Rows: rows, P50Ms: ms(times[runs/2]), P99Ms: ms(times[runs*99/100])})
	}
	return out, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// liveWrites claims queued tasks at the offered rate while the runner
// folds and commits them, then waits until the board has caught up.
func liveWrites(ctx context.Context, store *events.Store, runner *projections.Runner, cfg BoardConfig, queued []queuedTask) (int, error) {
	js := store.JetStream()
	total := int(float64(cfg.WriteRate) * cfg.WriteSeconds)
	total = min(total, len(queued))
	interval := time.Second / time.Duration(cfg.WriteRate)
	start := time.Now()
	var futures []jetstream.PubAckFuture
	for i := 0; i < total; i++ {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		id := queued[i].id
		env, err := events.NewEnvelope(time.Now(), taskqueue.Claimed, id, "bench", taskqueue.Schema,
			taskqueue.ClaimedPayload{Worker: "bench-live", Attempt: 1})
		if err != nil {
			return i, err
		}
		data, _ := json.Marshal(env)
		f, err := js.PublishAsync(taskqueue.Subject(queued[i].queue, id, taskqueue.Claimed), data)
		if err != nil {
			return i, err
		}
		futures = append(futures, f)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return total, ctx.Err()
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return total, err
		}
	}
	if err := runner.CatchUp(ctx); err != nil {
		return total, err
	}
	return total, runner.Save()
}

// legacyBoard measures the former board's model at cfg.LegacyTasks tasks:
// every task folded into a map in memory, and one save writing the whole
// board as a JSON snapshot (what it did every second while tasks changed).
func legacyBoard(ctx context.Context, store *events.Store, cfg BoardConfig, dir string, rep *BoardReport) error {
	runtime.GC()
	before := heapMB()
	tasks := map[string]*trellis.Task{}
	err := store.Read(ctx, events.StreamQueue, "", 0, func(rec events.Recorded) error {
		t, ok := tasks[rec.AggregateID]
		if !ok && (rec.Type != taskqueue.Added || len(tasks) >= cfg.LegacyTasks) {
			return nil
		}
		next, err := taskqueue.Apply(t, rec)
		if err != nil {
			return err
		}
		if next != nil {
			tasks[rec.AggregateID] = next
		}
		return nil
	})
	if err != nil {
		return err
	}
	rep.LegacyTasks = len(tasks)
	rep.LegacyHeapMB = heapMB() - before
	start := time.Now()
	sorted := make([]*trellis.Task, 0, len(tasks))
	for _, t := range tasks {
		sorted = append(sorted, t)
	}
	slices.SortFunc(sorted, func(a, b *trellis.Task) int { return strings.Compare(a.TaskID, b.TaskID) })
	data, err := json.Marshal(map[string]any{"version": 1, "last_seq": rep.Events, "tasks": sorted})
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "legacy-board.json")
	if err := projections.WriteFileAtomic(path, data); err != nil {
		return err
	}
	rep.LegacySnapshotMs = float64(time.Since(start).Microseconds()) / 1000
	rep.LegacySnapshotMB = float64(len(data)) / (1 << 20)
	runtime.KeepAlive(tasks)
	return os.Remove(path)
}

// heapMB returns the Go heap in use after a collection.
func heapMB() float64 {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / (1 << 20)
}

// rss returns the process's resident set and its anonymous and
// file-backed parts in MB (Linux; zeros elsewhere).
func rss() (total, anon, file float64) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			total = kb / 1024
		case "RssAnon:":
			anon = kb / 1024
		case "RssFile:":
			file = kb / 1024
		}
	}
	return total, anon, file
}
