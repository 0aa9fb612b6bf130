package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/server"
)

// cli runs the trellis CLI in-process and returns exit code, stdout, stderr.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func mustJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, s)
	}
}

// TestCLIQueueLifecycleInProcess: with no server running, every command
// starts Trellis in-process on the data dir for its duration.
func TestCLIQueueLifecycleInProcess(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	d := "--data=" + data
	code, out, errs := cli(t, "queue", "add", d, "--objective", "Refactor authentication module", "--input", "auth.py",
		"--acceptance", "tests pass", "--max-tool-calls", "3", "--max-steps", "2", "--metadata", "team=core", "--json")
	if code != 0 {
		t.Fatalf("add: exit %d: %s", code, errs)
	}
	var task trellis.Task
	mustJSON(t, out, &task)
	if task.TaskID == "" || task.Status != trellis.StatusQueued || task.Metadata["team"] != "core" || task.Budget.MaxSteps != 2 || task.ParentID != nil {
		t.Fatalf("add printed %+v", task)
	}
	if code, out, _ = cli(t, "queue", "next", d, "--worker", "agent-1", "--json"); code != 0 {
		t.Fatalf("next: exit %d", code)
	}
	var claimed trellis.Task
	mustJSON(t, out, &claimed)
	if claimed.TaskID != task.TaskID || claimed.ClaimedBy != "agent-1" {
		t.Fatalf("next printed %+v", claimed)
	}
	if code, out, _ = cli(t, "queue", "next", d, "--worker", "agent-1"); code != 0 || strings.TrimSpace(out) != "null" {
		t.Fatalf("empty next: exit %d, %q; want null", code, out)
	}
	code, out, errs = cli(t, "queue", "done", task.TaskID, d, "--worker", "agent-1", "--what-was-done", "Refactored",
		"--changed", "auth/core.py", "--next", "docs", "--citation", "chunk_abc123", "--steps-used", "5")
	if code != 0 {
		t.Fatalf("done: exit %d: %s", code, errs)
	}
	cpPath := filepath.Join(data, "checkpoints", task.TaskID+".md")
	if !strings.Contains(out, cpPath) || !strings.Contains(out, "BUDGET EXHAUSTED") {
		t.Fatalf("done output lacks checkpoint path or budget flag:\n%s", out)
	}
	md, err := os.ReadFile(cpPath)
	if err != nil || !strings.Contains(string(md), "# Checkpoint: "+task.TaskID) {
		t.Fatalf("checkpoint file: %v\n%s", err, md)
	}
	if code, _, errs = cli(t, "queue", "done", task.TaskID, d, "--worker", "agent-1", "--what-was-done", "again"); code != 4 || !strings.Contains(errs, "conflict") {
		t.Fatalf("done twice: exit %d (%s); want 4 conflict", code, errs)
	}
	code, out, _ = cli(t, "queue", "list", d, "--status", "done", "--json")
	var list trellis.TaskList
	mustJSON(t, out, &list)
	if code != 0 || len(list.Tasks) != 1 || list.Tasks[0].TaskID != task.TaskID || list.Counts["default"][trellis.StatusDone] != 1 {
		t.Fatalf("list: exit %d, %+v", code, list)
	}
	code, out, _ = cli(t, "audit", task.TaskID, d, "--json")
	var evs []map[string]any
	mustJSON(t, out, &evs)
	if code != 0 || len(evs) != 3 || evs[0]["type"] != "added" || evs[1]["type"] != "claimed" || evs[2]["type"] != "completed" {
		t.Fatalf("audit: exit %d, %v", code, evs)
	}
	exp := filepath.Join(t.TempDir(), "tasks.jsonl")
	if code, _, errs = cli(t, "queue", "export", d, "--out", exp); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errs)
	}
	if left, _ := os.ReadDir(filepath.Dir(exp)); len(left) != 1 {
		t.Fatalf("export left %d files beside its output", len(left))
	}
	lines, _ := os.ReadFile(exp)
	rows := strings.Split(strings.TrimSpace(string(lines)), "\n")
	if len(rows) != 3 || !strings.Contains(rows[2], `"status":"done"`) || !strings.Contains(rows[0], `"status":"queued"`) {
		t.Fatalf("export wrote %d lines:\n%s", len(rows), lines)
	}
	if code, out, _ = cli(t, "replay", d); code != 0 || !strings.Contains(out, "rebuilt board") {
		t.Fatalf("replay: exit %d\n%s", code, out)
	}
	if code, out, _ = cli(t, "queue", "show", task.TaskID, d); code != 0 || !strings.Contains(out, "[done]") {
		t.Fatalf("show: exit %d\n%s", code, out)
	}
	// Pages: two more tasks, two rows per page, the cursor printed last.
	for _, o := range []string{"second", "third"} {
		if code, _, errs = cli(t, "queue", "add", d, "--objective", o); code != 0 {
			t.Fatalf("add: exit %d: %s", code, errs)
		}
	}
	var page1, page2 trellis.TaskList
	code, out, _ = cli(t, "queue", "list", d, "--limit", "2", "--json")
	mustJSON(t, out, &page1)
	if code != 0 || len(page1.Tasks) != 2 || page1.NextCursor == "" {
		t.Fatalf("page 1: exit %d, %+v", code, page1)
	}
	if code, out, _ = cli(t, "queue", "list", d, "--limit", "2"); code != 0 || !strings.Contains(out, "more: --cursor "+page1.NextCursor) {
		t.Fatalf("human page 1: exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, "queue", "list", d, "--limit", "2", "--cursor", page1.NextCursor, "--json")
	mustJSON(t, out, &page2)
	if code != 0 || len(page2.Tasks) != 1 || page2.NextCursor != "" || page2.Tasks[0].TaskID <= page1.Tasks[1].TaskID {
		t.Fatalf("page 2: exit %d, %+v", code, page2)
	}
	// Text: objective words, any case.
	var byText trellis.TaskList
	code, out, _ = cli(t, "queue", "list", d, "--text", "THIRD", "--json")
	mustJSON(t, out, &byText)
	if code != 0 || len(byText.Tasks) != 1 || byText.Tasks[0].Objective != "third" {
		t.Fatalf("--text: exit %d, %+v", code, byText)
	}
}

// TestCLIExitCodes: documented, distinct exit codes; bad input never
// reaches the log.
func TestCLIExitCodes(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	d := "--data=" + data
	unknown := events.NewID(time.Now())
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"empty objective", []string{"queue", "add", d, "--objective", ""}, 2, "objective"},
		{"negative budget", []string{"queue", "add", d, "--objective", "x", "--max-steps", "-1"}, 2, "max_steps"},
		{"bad metadata", []string{"queue", "add", d, "--objective", "x", "--metadata", "novalue"}, 2, "metadata"},
		{"bad queue", []string{"queue", "add", d, "--objective", "x", "--queue", "a.b"}, 2, "queue"},
		{"non-utf8", []string{"queue", "add", d, "--objective", "bad \xff"}, 2, "UTF-8"},
		{"unknown flag", []string{"queue", "add", d, "--objectiv", "x"}, 2, "unknown flag"},
		{"missing arg", []string{"queue", "show", d}, 2, "arg"},
		{"invalid id", []string{"queue", "show", "not-an-id", d}, 2, "task_id"},
		{"unknown id", []string{"queue", "show", unknown, d}, 3, "not_found"},
		{"done unknown", []string{"queue", "done", unknown, d, "--worker", "w", "--what-was-done", "x"}, 3, "not_found"},
		{"next without worker", []string{"queue", "next", d}, 2, "worker"},
		{"audit unknown", []string{"audit", unknown, d}, 3, "not_found"},
		{"bad status", []string{"queue", "list", d, "--status", "nope"}, 2, "status"},
		{"negative limit", []string{"queue", "list", d, "--limit", "-1"}, 2, "limit"},
		{"limit over the maximum", []string{"queue", "list", d, "--limit", "1001"}, 2, "limit"},
		{"limit not a number", []string{"queue", "list", d, "--limit", "many"}, 2, "limit"},
		{"text too long", []string{"queue", "list", d, "--text", strings.Repeat("x", 257)}, 2, "text"},
		{"malformed cursor", []string{"queue", "list", d, "--cursor", "junk"}, 2, "cursor"},
		{"bad since", []string{"queue", "list", d, "--since", "2026-13-45"}, 2, "since"},
		{"export into a missing directory", []string{"queue", "export", d, "--out", filepath.Join(data, "no", "such", "dir", "x.jsonl")}, 2, "write"},
	}
	for _, c := range cases {
		code, _, errs := cli(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d mentioning %q", c.name, code, errs, c.code, c.want)
		}
	}
	// Nothing reached the log.
	code, out, _ := cli(t, "queue", "export", d)
	if code != 0 || strings.TrimSpace(out) != "" {
		t.Fatalf("log is not empty after bad input: %q", out)
	}
}

// TestCLIUsesRunningServer: with `trellis serve` running on the data dir,
// commands go to it over NATS (found through serve.json), and with the
// lock held but no server answering, the CLI says the data dir is locked.
func TestCLIUsesRunningServer(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := server.Start(ctx, server.Config{DataDir: data, NATSAddr: "127.0.0.1:0", ServeAPI: true, WriteInfo: true, SyncInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	code, out, errs := cli(t, "queue", "add", "--data", data, "--objective", "via server", "--json")
	if code != 0 {
		t.Fatalf("add through server: exit %d: %s", code, errs)
	}
	var task trellis.Task
	mustJSON(t, out, &task)
	if got := srv.Service().Board(); got == nil {
		t.Fatal("no board")
	}
	if err := srv.Service().CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := srv.Service().Board().Task(task.TaskID); err != nil || got == nil {
		t.Fatalf("the running server's board does not have the task the CLI added (%v)", err)
	}
	// Same through TRELLIS_NATS_URL semantics (--nats-url).
	if code, _, errs = cli(t, "queue", "show", task.TaskID, "--data", t.TempDir(), "--nats-url", srv.Info().NATSURL); code != 0 {
		t.Fatalf("show via --nats-url: exit %d: %s", code, errs)
	}
	// The lock is held but no server answers (serve.json gone).
	if err := os.Remove(server.InfoPath(data)); err != nil {
		t.Fatal(err)
	}
	code, _, errs = cli(t, "queue", "list", "--data", data)
	if code != 7 || !strings.Contains(errs, "locked") {
		t.Fatalf("locked data dir: exit %d, %q; want 7 and 'locked'", code, errs)
	}
}

// TestCLIWorkerNeedsServer: with no server running, `trellis worker` says
// how to get one and exits 7 without taking the data dir, so the next
// command still works; a stale serve.json and an unreachable --nats-url
// are refused the same way.
func TestCLIWorkerNeedsServer(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	code, _, errs := cli(t, "worker", "--data", data, "--exec", "true", "--metrics-addr", "")
	if code != 7 || !strings.Contains(errs, "needs a running trellis server") || !strings.Contains(errs, "trellis serve --data "+data) ||
		!strings.Contains(errs, "--nats-url") || !strings.Contains(errs, "--embedded") {
		t.Fatalf("worker without a server: exit %d, %q; want 7 saying how to start or reach one", code, errs)
	}
	if code, _, errs := cli(t, "queue", "add", "--data", data, "--objective", "after the worker"); code != 0 {
		t.Fatalf("queue add after the refused worker: exit %d: %s", code, errs)
	}
	dead := "nats://" + freeAddr(t)
	info := `{"pid": 1, "nats_url": "` + dead + `", "data_dir": "` + data + `", "embedded": true}`
	if err := os.WriteFile(server.InfoPath(data), []byte(info), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = cli(t, "worker", "--data", data, "--exec", "true", "--metrics-addr", "")
	if code != 7 || !strings.Contains(errs, dead) || !strings.Contains(errs, "serve.json") || !strings.Contains(errs, "does not answer") {
		t.Fatalf("worker with a stale serve.json: exit %d, %q", code, errs)
	}
	code, _, errs = cli(t, "worker", "--data", t.TempDir(), "--nats-url", dead, "--exec", "true", "--metrics-addr", "")
	if code != 7 || !strings.Contains(errs, dead) || !strings.Contains(errs, "--embedded") {
		t.Fatalf("worker with an unreachable --nats-url: exit %d, %q", code, errs)
	}
}

// TestCLIServeRefusals: serve on a data dir another server holds, or on a
// port in use, exits 7 (unavailable) naming the holder's pid or the
// address; a malformed address exits 2 naming the flag's field.
func TestCLIServeRefusals(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	data := t.TempDir()
	srv, err := server.Start(ctx, server.Config{DataDir: data, NATSAddr: "127.0.0.1:0", WriteInfo: true, SyncInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	code, _, errs := cli(t, "serve", "--data", data, "--nats-addr", "127.0.0.1:0", "--http-addr", "")
	if code != 7 || !strings.Contains(errs, "locked") || !strings.Contains(errs, fmt.Sprintf("pid %d", os.Getpid())) || strings.Contains(errs, "internal") {
		t.Fatalf("serve on a held data dir: exit %d, %q; want 7 naming the holder", code, errs)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	code, _, errs = cli(t, "serve", "--data", t.TempDir(), "--nats-addr", addr, "--http-addr", "")
	if code != 7 || !strings.Contains(errs, addr) || !strings.Contains(errs, "in use") || !strings.Contains(errs, "--nats-addr") {
		t.Fatalf("serve on a NATS port in use: exit %d, %q", code, errs)
	}
	code, _, errs = cli(t, "serve", "--data", t.TempDir(), "--nats-addr", "127.0.0.1:0", "--http-addr", addr)
	if code != 7 || !strings.Contains(errs, addr) || !strings.Contains(errs, "--http-addr") {
		t.Fatalf("serve on an HTTP port in use: exit %d, %q", code, errs)
	}
	code, _, errs = cli(t, "serve", "--data", t.TempDir(), "--nats-addr", "127.0.0.1:0", "--http-addr", "nonsense")
	if code != 2 || !strings.Contains(errs, "http_addr") {
		t.Fatalf("serve on a malformed address: exit %d, %q", code, errs)
	}
}

// TestCLIVersion: `trellis --version` and `trellis version` print the
// version with the Go toolchain and platform; --json gives the fields.
func TestCLIVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, errs := cli(t, args...)
		if code != 0 || !strings.HasPrefix(out, "trellis "+server.Version) || !strings.Contains(out, runtime.Version()) ||
			!strings.Contains(out, runtime.GOOS+"/"+runtime.GOARCH) || strings.Count(out, "\n") != 1 {
			t.Errorf("trellis %v: exit %d, %q (%s)", args, code, out, errs)
		}
	}
	code, out, _ := cli(t, "version", "--json")
	var v struct {
		Version, Go, Platform string
	}
	mustJSON(t, out, &v)
	if code != 0 || v.Version != server.Version || v.Go != runtime.Version() || v.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Fatalf("version --json: exit %d, %+v", code, v)
	}
	if code, _, errs := cli(t, "version", "extra"); code != 2 {
		t.Fatalf("version with an argument: exit %d (%s)", code, errs)
	}
}

// TestMakeRunTakesServeFlags: `make run ARGS="..."` passes the flags to
// `trellis serve` (checked with make -n, which prints the commands).
func TestMakeRunTakesServeFlags(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	out, err := exec.Command("make", "-n", "-C", "../..", "run", "ARGS=--http-addr 127.0.0.1:7171 --nats-addr 127.0.0.1:4333", "DATA=/tmp/d").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "serve --data /tmp/d --http-addr 127.0.0.1:7171 --nats-addr 127.0.0.1:4333") {
		t.Fatalf("make run does not pass ARGS to serve:\n%s", out)
	}
}

// TestCLIListAuditReplayOutput: `queue list` prints a header row over
// aligned columns; `audit --json` gives every event an actor field (empty
// when no one acted, as for an add); `replay --help` names every
// projection replay rebuilds.
func TestCLIListAuditReplayOutput(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	d := "--data=" + data
	var ids []string
	for _, obj := range []string{"first", "second"} {
		code, out, errs := cli(t, "queue", "add", d, "--objective", obj, "--json")
		if code != 0 {
			t.Fatalf("add: exit %d: %s", code, errs)
		}
		var task trellis.Task
		mustJSON(t, out, &task)
		ids = append(ids, task.TaskID)
	}
	if code, _, errs := cli(t, "queue", "next", d, "--worker", "agent-7"); code != 0 {
		t.Fatalf("next: exit %d: %s", code, errs)
	}
	code, out, _ := cli(t, "queue", "list", d)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if code != 0 || len(lines) < 3 {
		t.Fatalf("list: exit %d:\n%s", code, out)
	}
	header := lines[0]
	cols := []string{"TASK ID", "STATUS", "QUEUE", "CLAIMED BY", "OBJECTIVE"}
	for i, c := range cols {
		if !strings.Contains(header, c) || (i > 0 && strings.Index(header, c) < strings.Index(header, cols[i-1])) {
			t.Fatalf("list header %q lacks %q in order", header, c)
		}
	}
	rows := map[string]string{}
	for _, l := range lines[1:3] {
		rows[strings.Fields(l)[0]] = l
	}
	claimed := rows[ids[0]]
	for col, want := range map[string]string{"STATUS": "claimed", "QUEUE": "default", "CLAIMED BY": "agent-7", "OBJECTIVE": "first"} {
		if at := strings.Index(header, col); !strings.HasPrefix(claimed[at:], want) {
			t.Errorf("column %s of %q is not %q under the header %q", col, claimed, want, header)
		}
	}
	if at := strings.Index(header, "OBJECTIVE"); !strings.HasPrefix(rows[ids[1]][at:], "second") {
		t.Errorf("objective of an unclaimed row is not aligned: %q under %q", rows[ids[1]], header)
	}

	code, out, _ = cli(t, "audit", ids[0], d, "--json")
	var evs []map[string]any
	mustJSON(t, out, &evs)
	if code != 0 || len(evs) != 2 {
		t.Fatalf("audit: exit %d: %v", code, evs)
	}
	for _, ev := range evs {
		if _, ok := ev["actor"]; !ok {
			t.Errorf("audit event without an actor field: %v", ev)
		}
	}
	if evs[0]["type"] != "added" || evs[0]["actor"] != "" || evs[1]["actor"] != "agent-7" {
		t.Errorf("audit actors: %v / %v", evs[0], evs[1])
	}

	code, out, _ = cli(t, "replay", d, "--json")
	var res struct {
		Projections []struct{ Name string }
	}
	mustJSON(t, out, &res)
	if code != 0 || len(res.Projections) < 5 {
		t.Fatalf("replay: exit %d: %+v", code, res)
	}
	_, help, _ := cli(t, "replay", "--help")
	for _, p := range res.Projections {
		if !strings.Contains(help, p.Name) {
			t.Errorf("replay --help does not name the %s projection:\n%s", p.Name, help)
		}
	}
}
