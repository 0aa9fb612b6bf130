package main

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
	"github.com/trellis/trellis/server"
)

// startServer runs a Trellis server on data that CLI commands reach
// through its NATS API.
func startServer(t *testing.T, data string) *server.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := server.Start(ctx, server.Config{DataDir: data, NATSAddr: "127.0.0.1:0", ServeAPI: true, WriteInfo: true, SyncInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// cliOK runs the CLI and fails the test unless it exits 0.
func cliOK(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := cli(t, args...)
	if code != 0 {
		t.Fatalf("trellis %s: exit %d: %s", strings.Join(args, " "), code, errs)
	}
	return out
}

// lifecycle adds a task to queue q, claims it as worker w and completes
// it, through the CLI; it returns the task id.
func lifecycle(t *testing.T, d, q, w string) string {
	t.Helper()
	var task trellis.Task
	mustJSON(t, cliOK(t, "queue", "add", d, "--queue", q, "--objective", "work for "+w, "--json"), &task)
	cliOK(t, "queue", "next", d, "--queue", q, "--worker", w)
	cliOK(t, "queue", "done", task.TaskID, d, "--worker", w, "--what-was-done", "done by "+w)
	return task.TaskID
}

// TestCLIAuditQuery: audit across aggregates in people's form, --json and
// --jsonl, by actor, type and window, both in-process and through a
// running server; bad input exits 2 (3 for an unknown queue).
func TestCLIAuditQuery(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	d := "--data=" + data
	first := lifecycle(t, d, "jobs", "w1") // in-process
	time.Sleep(5 * time.Millisecond)
	mid := time.Now().UTC().Format(time.RFC3339Nano)
	time.Sleep(5 * time.Millisecond)

	out := cliOK(t, "audit", d, "--queue", "jobs")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.Contains(lines[1], "claimed") || !strings.Contains(lines[1], "w1") {
		t.Fatalf("audit --queue (in-process):\n%s", out)
	}

	startServer(t, data)
	lifecycle(t, d, "jobs", "w2")
	lifecycle(t, d, "other", "w2")
	var evs []trellis.AuditEvent
	mustJSON(t, cliOK(t, "audit", d, "--queue", "jobs", "--json"), &evs)
	if len(evs) != 6 || evs[0].AggregateID != first || evs[5].Actor != "w2" || evs[1].Prev != evs[0].Hash || evs[0].Stored.IsZero() {
		t.Fatalf("audit --queue --json: %+v", evs)
	}
	out = cliOK(t, "audit", d, "--stream", "TRELLIS_QUEUE", "--actor", "w2", "--jsonl")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 4 {
		t.Fatalf("audit --stream --actor --jsonl: %d lines\n%s", len(lines), out)
	}
	mustJSON(t, cliOK(t, "audit", d, "--queue", "jobs", "--since", mid, "--type", "completed", "--json"), &evs)
	if len(evs) != 1 || evs[0].Actor != "w2" {
		t.Fatalf("audit --since --type: %+v", evs)
	}
	mustJSON(t, cliOK(t, "audit", d, "--queue", "jobs", "--until", mid, "--json"), &evs)
	if len(evs) != 3 || evs[0].AggregateID != first {
		t.Fatalf("audit --until: %+v", evs)
	}
	if out := cliOK(t, "audit", d, "--queue", "jobs", "--since", "2099-01-01", "--json"); strings.TrimSpace(out) != "[\n]" {
		t.Fatalf("an empty window as JSON: %q", out)
	}
	if out := cliOK(t, "audit", d, "--queue", "jobs", "--since", "2099-01-01"); !strings.Contains(out, "no events") {
		t.Fatalf("an empty window: %q", out)
	}
	out = cliOK(t, "audit", first, d, "--jsonl")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.Contains(lines[2], `"hash"`) {
		t.Fatalf("audit ID --jsonl:\n%s", out)
	}

	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"audit", d}, 2, "--queue, --graph or --stream"},
		{[]string{"audit", d, "--queue", "jobs", "--stream", "queue"}, 2, "exactly one"},
		{[]string{"audit", d, "--queue", "jobs", "--json", "--jsonl"}, 2, "--jsonl"},
		{[]string{"audit", first, d, "--queue", "jobs"}, 2, "without an ID"},
		{[]string{"audit", d, "--stream", "TRELLIS_NOPE"}, 2, "unknown stream"},
		{[]string{"audit", d, "--queue", "nosuch"}, 3, "no events for queue nosuch"},
		{[]string{"audit", d, "--graph", "g0123456789abcdef0123"}, 3, "no events"},
		{[]string{"audit", d, "--graph", "plan.vine"}, 2, "graph"},
		{[]string{"audit", d, "--queue", "jobs", "--since", "2026-01-02", "--until", "2026-01-01"}, 2, "until"},
		{[]string{"audit", d, "--queue", "jobs", "--since", "tomorrow"}, 2, "since"},
		{[]string{"audit", d, "--queue", "jobs", "--until", "-3h"}, 2, "until"},
		{[]string{"audit", d, "--queue", "jobs", "--worker", "w1"}, 2, "unknown flag"},
		{[]string{"audit", d, "a", "b"}, 2, "accepts at most 1 arg"},
	} {
		code, _, errs := cli(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.msg) {
			t.Errorf("trellis %s: exit %d %q; want %d with %q", strings.Join(tc.args, " "), code, errs, tc.code, tc.msg)
		}
	}
}

// TestCLIAuditVerifyAndExport: verify passes on a clean log and an
// export of it, exits 9 naming the position of a message deleted and one
// edited directly on the stream, and of a truncated or edited export;
// bad input exits 2.
func TestCLIAuditVerifyAndExport(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	d := "--data=" + data
	srv := startServer(t, data)
	a := lifecycle(t, d, "jobs", "w1")
	lifecycle(t, d, "jobs", "w2")

	out := cliOK(t, "audit", "verify", d)
	if !strings.Contains(out, "OK: no removed") || !strings.Contains(out, "TRELLIS_QUEUE") {
		t.Fatalf("verify of a clean log:\n%s", out)
	}
	exp := filepath.Join(t.TempDir(), "audit.jsonl")
	out = cliOK(t, "audit", "export", d, "--out", exp)
	if !strings.Contains(out, "exported 6 events") || !strings.Contains(out, "digest sha256-") {
		t.Fatalf("export:\n%s", out)
	}
	digest := out[strings.Index(out, "sha256-") : strings.Index(out, "sha256-")+71]
	out = cliOK(t, "audit", "verify", "--file", exp) // offline: no --data, no server needed
	if !strings.Contains(out, "OK") || !strings.Contains(out, digest) {
		t.Fatalf("verify --file of a clean export:\n%s", out)
	}

	// A truncated and an edited export.
	whole, err := os.ReadFile(exp)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.jsonl")
	if err := os.WriteFile(cut, whole[:len(whole)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, "audit", "verify", "--file", cut)
	if code != 9 || !strings.Contains(out, "truncated") || !strings.Contains(errs, "tampered") {
		t.Fatalf("truncated export: exit %d\n%s%s", code, out, errs)
	}
	edited := filepath.Join(t.TempDir(), "edited.jsonl")
	if err := os.WriteFile(edited, []byte(strings.Replace(string(whole), `"worker":"w1"`, `"worker":"w666"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	var rep verifyOutput
	code, out, _ = cli(t, "audit", "verify", "--file", edited, "--json")
	mustJSON(t, out, &rep)
	if code != 9 || rep.OK || len(rep.Findings) == 0 || rep.Findings[0].Kind != "altered" || rep.Findings[0].Line == 0 || rep.Findings[0].Seq == 0 {
		t.Fatalf("edited export: exit %d %+v", code, rep)
	}

	// Tamper with the live log: delete the claim of the first task, edit
	// the completion of the second.
	ctx := context.Background()
	st, err := srv.Store().JetStream().Stream(ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := srv.Store().Load(ctx, events.StreamQueue, "trellis.queue.jobs.>")
	if err != nil || len(recs) != 6 || recs[0].AggregateID != a {
		t.Fatalf("log: %d events, %v", len(recs), err)
	}
	if err := st.DeleteMsg(ctx, recs[1].Seq); err != nil {
		t.Fatal(err)
	}
	changed := recs[5].Envelope
	changed.Payload = json.RawMessage(`{"worker":"w2","what_was_done":"nothing at all"}`)
	if err := st.SecureDeleteMsg(ctx, recs[5].Seq); err != nil {
		t.Fatal(err)
	}
	data2, _ := json.Marshal(changed)
	ack, err := srv.Store().JetStream().Publish(ctx, recs[5].Subject, data2)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs = cli(t, "audit", "verify", d)
	if code != 9 || !strings.Contains(errs, "tampered") {
		t.Fatalf("verify of a tampered log: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"removed    TRELLIS_QUEUE #" + itoa(recs[1].Seq) + ":",
		"removed    TRELLIS_QUEUE #" + itoa(recs[2].Seq) + " " + a + ":",
		"removed    TRELLIS_QUEUE #" + itoa(recs[5].Seq) + ":",
		// The edited event was its task's last: its link still holds, but
		// it was stored without the message id Trellis always sends.
		"foreign    TRELLIS_QUEUE #" + itoa(ack.Sequence) + " " + recs[5].AggregateID + ":",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("verify output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = cli(t, "audit", "verify", d, "--json")
	mustJSON(t, out, &rep)
	if code != 9 || rep.OK || len(rep.Findings) < 4 {
		t.Fatalf("verify --json: exit %d %+v", code, rep)
	}

	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"audit", "export", d}, 2, "out: is required"},
		{[]string{"audit", "export", d, "--out", exp, "--since", "2026-01-02", "--until", "2026-01-01"}, 2, "until"},
		{[]string{"audit", "export", d, "--out", exp, "--since", "never"}, 2, "since"},
		{[]string{"audit", "export", d, "--out", filepath.Join(t.TempDir(), "no", "such", "dir", "x.jsonl")}, 2, "out"},
		{[]string{"audit", "verify", "--file", filepath.Join(t.TempDir(), "missing.jsonl")}, 2, "file"},
		{[]string{"audit", "verify", "--file", exp, "--since", "1h"}, 2, "--since"},
		{[]string{"audit", "verify", d, "--since", "soon"}, 2, "since"},
		{[]string{"audit", "verify", d, "extra"}, 2, "unknown command"},
	} {
		code, _, errs := cli(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.msg) {
			t.Errorf("trellis %s: exit %d %q; want %d with %q", strings.Join(tc.args, " "), code, errs, tc.code, tc.msg)
		}
	}
	// The export refused above left nothing behind.
	if _, err := os.Stat(filepath.Join(filepath.Dir(exp), "x.jsonl")); err == nil {
		t.Error("a refused export left a file")
	}
}

func itoa(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestCLIReplayUntilAndListAsOf: replay --until rebuilds as of a moment
// into a directory without touching the live board; queue list --as-of
// shows the board as it stood then; bad input exits 2 (3 for a sequence
// the log does not hold).
func TestCLIReplayUntilAndListAsOf(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	d := "--data=" + data
	startServer(t, data)
	var task trellis.Task
	mustJSON(t, cliOK(t, "queue", "add", d, "--queue", "jobs", "--objective", "then claimed, now done", "--json"), &task)
	cliOK(t, "queue", "next", d, "--queue", "jobs", "--worker", "w1")
	time.Sleep(5 * time.Millisecond)
	moment := time.Now().UTC().Format(time.RFC3339Nano)
	time.Sleep(5 * time.Millisecond)
	cliOK(t, "queue", "done", task.TaskID, d, "--worker", "w1", "--what-was-done", "finished")
	cliOK(t, "queue", "add", d, "--queue", "jobs", "--objective", "added later")

	var then trellis.TaskList
	mustJSON(t, cliOK(t, "queue", "list", d, "--as-of", moment, "--json"), &then)
	if len(then.Tasks) != 1 || then.Tasks[0].Status != trellis.StatusClaimed || then.Counts["jobs"][trellis.StatusClaimed] != 1 {
		t.Fatalf("list --as-of: %+v", then)
	}
	out := cliOK(t, "queue", "list", d, "--as-of", moment, "--status", "claimed")
	if !strings.Contains(out, task.TaskID) || !strings.Contains(out, "as of") {
		t.Fatalf("list --as-of for people:\n%s", out)
	}
	var now trellis.TaskList
	mustJSON(t, cliOK(t, "queue", "list", d, "--json"), &now)
	if len(now.Tasks) != 2 || now.Tasks[0].Status != trellis.StatusDone {
		t.Fatalf("the live list changed: %+v", now)
	}

	dir := filepath.Join(t.TempDir(), "at")
	out = cliOK(t, "replay", d, "--until", moment, "--out", dir)
	if !strings.Contains(out, "rebuilt board") || !strings.Contains(out, "as of") {
		t.Fatalf("replay --until:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "projections", "board.db")); err != nil {
		t.Fatalf("no board in %s: %v", dir, err)
	}
	cliOK(t, "replay", d, "--until", "2", "--out", filepath.Join(t.TempDir(), "seq"), "--json")

	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"replay", d, "--until", moment}, 2, "--out"},
		{[]string{"replay", d, "--out", t.TempDir()}, 2, "--until"},
		{[]string{"replay", d, "--until", "teatime", "--out", t.TempDir()}, 2, "until"},
		{[]string{"replay", d, "--until", "TRELLIS_NOPE:3", "--out", t.TempDir()}, 2, "unknown stream"},
		{[]string{"replay", d, "--until", "9999", "--out", t.TempDir()}, 3, "no event #9999"},
		{[]string{"replay", d, "--until", moment, "--out", dir}, 2, "not empty"},
		{[]string{"replay", d, "--until", moment, "--out", filepath.Join(data, "rebuilt")}, 2, "inside the data directory"},
		{[]string{"queue", "list", d, "--as-of", "someday"}, 2, "as-of"},
		{[]string{"queue", "list", d, "--as-of", moment, "--status", "sleeping"}, 2, "status"},
	} {
		code, _, errs := cli(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.msg) {
			t.Errorf("trellis %s: exit %d %q; want %d with %q", strings.Join(tc.args, " "), code, errs, tc.code, tc.msg)
		}
	}
}
