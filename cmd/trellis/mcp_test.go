package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
)

// TestMCPStdioWorkerIdentity runs real `trellis mcp` processes against a
// running server. Two agent clients (here: two shells, each starting its
// own `trellis mcp`) get distinct default workers,
// mcp:<client>@<host>:<parent pid>, and neither can finish the other's
// claim; a `trellis mcp` restarted by the same client keeps the identity
// and finishes the claim its predecessor made; TRELLIS_WORKER replaces the
// default, and an invalid one is refused at start with exit 2.
func TestMCPStdioWorkerIdentity(t *testing.T) {
	t.Parallel()
	srv, url := queueServer(t)
	bin := trellisBinary(t)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addTasks(t, srv.Service(), "mcpq", 4, 0)

	env := func(extra ...string) []string {
		var out []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "TRELLIS_") {
				out = append(out, kv)
			}
		}
		return append(out, extra...)
	}
	// direct starts `trellis mcp` as a child of this test process.
	direct := func(extra ...string) *exec.Cmd {
		cmd := exec.Command(bin, "mcp", "--nats-url", url, "--data", t.TempDir())
		cmd.Env = env(extra...)
		return cmd
	}
	// viaShell starts it from a shell of its own, which stays its parent
	// (the command is not the shell's last).
	viaShell := func() *exec.Cmd {
		cmd := exec.Command("sh", "-c", `"$0" mcp --nats-url "$1" --data "$2"; exit $?`, bin, url, t.TempDir())
		cmd.Env = env()
		return cmd
	}
	connect := func(cmd *exec.Cmd) *mcp.ClientSession {
		t.Helper()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent-cli", Version: "v0"}, nil).
			Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect to %v: %v\n%s", cmd.Args, err, stderr.String())
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	callTool := func(cs *mcp.ClientSession, tool string, args map[string]any) (*trellis.Task, string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if res.IsError {
			return nil, res.Content[0].(*mcp.TextContent).Text
		}
		data, _ := json.Marshal(res.StructuredContent)
		var task trellis.Task
		if err := json.Unmarshal(data, &task); err != nil || task.TaskID == "" {
			t.Fatalf("%s: no task in %s (%v)", tool, data, err)
		}
		return &task, ""
	}
	next := func(cs *mcp.ClientSession) *trellis.Task {
		t.Helper()
		task, msg := callTool(cs, "queue_next", map[string]any{"queue": "mcpq"})
		if task == nil {
			t.Fatalf("queue_next: %s", msg)
		}
		return task
	}

	// Two clients: distinct identities, named after their own processes.
	shA, shB := viaShell(), viaShell()
	a, b := connect(shA), connect(shB)
	ta, tb := next(a), next(b)
	wantA := fmt.Sprintf("mcp:agent-cli@%s:%d", host, shA.Process.Pid)
	wantB := fmt.Sprintf("mcp:agent-cli@%s:%d", host, shB.Process.Pid)
	if ta.ClaimedBy != wantA || tb.ClaimedBy != wantB || wantA == wantB {
		t.Fatalf("claimed by %q and %q; want %q and %q", ta.ClaimedBy, tb.ClaimedBy, wantA, wantB)
	}
	if _, msg := callTool(b, "queue_done", map[string]any{"task_id": ta.TaskID, "what_was_done": "not mine"}); !strings.HasPrefix(msg, "conflict: ") {
		t.Fatalf("done of A's claim by B = %q; want conflict", msg)
	}
	if done, msg := callTool(a, "queue_done", map[string]any{"task_id": ta.TaskID, "what_was_done": "mine"}); done == nil || done.Status != trellis.StatusDone {
		t.Fatalf("done by A: %v %s", done, msg)
	}

	// The same client restarts its server: the new process keeps the
	// identity and finishes the claim.
	first := connect(direct())
	tc := next(first)
	if want := fmt.Sprintf("mcp:agent-cli@%s:%d", host, os.Getpid()); tc.ClaimedBy != want {
		t.Fatalf("claimed by %q; want %q", tc.ClaimedBy, want)
	}
	if err := first.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	second := connect(direct())
	if done, msg := callTool(second, "queue_done", map[string]any{"task_id": tc.TaskID, "what_was_done": "after restart"}); done == nil || done.Status != trellis.StatusDone {
		t.Fatalf("done after restart: %v %s", done, msg)
	}

	// TRELLIS_WORKER names the worker.
	pinned := connect(direct("TRELLIS_WORKER=pinned-e"))
	if td := next(pinned); td.ClaimedBy != "pinned-e" {
		t.Fatalf("with TRELLIS_WORKER: claimed by %q", td.ClaimedBy)
	}

	// An invalid TRELLIS_WORKER stops the server before it serves.
	bad := direct("TRELLIS_WORKER=has space")
	var stderr bytes.Buffer
	bad.Stderr = &stderr
	err = bad.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "invalid: worker: ") || !strings.Contains(stderr.String(), "TRELLIS_WORKER") {
		t.Fatalf("invalid TRELLIS_WORKER: %v, %q; want exit 2 naming it", err, stderr.String())
	}
}
