package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/server"
)

// runIn runs the trellis binary in dir and returns its exit code, stdout
// and stderr.
func runIn(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(trellisBinary(t), args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		t.Fatalf("trellis %v: %v", args, err)
	}
	return 0, out.String(), errb.String()
}

// TestVineServeWorkspaces: `trellis serve --workspace WS`, started in
// another directory, shows its roots in the banner and serve.json; a CLI
// command sends paths resolved against its own working directory; a file
// outside the server's roots is refused with the roots, the file and the
// restart that fixes it; and a CLI --workspace the server lacks is
// reported instead of silently ignored.
func TestVineServeWorkspaces(t *testing.T) {
	t.Parallel()
	data, ws, other, srvDir := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "plans"), 0o755); err != nil {
		t.Fatal(err)
	}
	plan := "vine 1.2.0\n---\n[root] Ship (notstarted)\n-> a\n---\n[a] A (notstarted)\n"
	for _, p := range []string{filepath.Join(ws, "plans", "plan.vine"), filepath.Join(other, "o.vine")} {
		if err := os.WriteFile(p, []byte(plan), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(trellisBinary(t), "serve", "--data", data, "--nats-addr", "127.0.0.1:0", "--http-addr", "", "--workspace", ws)
	cmd.Dir = srvDir
	stdout := &lockedWriter{w: &bytes.Buffer{}}
	stderr := &lockedWriter{w: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	banner := func() string {
		stdout.mu.Lock()
		defer stdout.mu.Unlock()
		return stdout.w.String()
	}
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(banner(), "recorded in") {
		if time.Now().After(deadline) {
			stderr.mu.Lock()
			t.Fatalf("serve did not start:\n%s\n%s", banner(), stderr.w.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	info, err := server.ReadInfo(data)
	if err != nil || info == nil {
		t.Fatalf("serve.json: %+v, %v", info, err)
	}
	if !slices.Equal(info.Workspaces, []string{ws}) {
		t.Fatalf("serve.json workspaces = %v; want [%s]", info.Workspaces, ws)
	}
	if !strings.Contains(banner(), "workspace: "+ws) {
		t.Fatalf("banner does not show the workspace root:\n%s", banner())
	}

	// A relative path from inside the root: resolved against the CLI's
	// working directory, not the server's.
	code, out, errs := runIn(t, filepath.Join(ws, "plans"), "vine", "next", "plan.vine", "--data", data, "--json")
	if code != 0 {
		t.Fatalf("vine next inside the root: exit %d: %s", code, errs)
	}
	var fr struct {
		GraphID string `json:"graph_id"`
	}
	mustJSON(t, out, &fr)
	if fr.GraphID != events.GraphID("plans/plan.vine") {
		t.Fatalf("graph_id = %q; want that of plans/plan.vine", fr.GraphID)
	}

	// Outside the server's roots: refused, saying how to fix it.
	outside := filepath.Join(other, "o.vine")
	code, _, errs = runIn(t, other, "vine", "write", "o.vine", "--data", data, "--ops", `[{"op":"set_status","id":"a","status":"started"}]`)
	if code != 2 {
		t.Fatalf("file outside the roots: exit %d: %s", code, errs)
	}
	for _, want := range []string{outside, ws, "trellis serve --workspace"} {
		if !strings.Contains(errs, want) {
			t.Errorf("error %q does not mention %q", errs, want)
		}
	}
	if got, _ := os.ReadFile(outside); string(got) != plan {
		t.Fatalf("refused file changed:\n%s", got)
	}

	// --workspace on the CLI does not reach the running server: it says so.
	code, _, errs = runIn(t, other, "vine", "next", "o.vine", "--data", data, "--workspace", ".")
	if code != 2 || !strings.Contains(errs, "warning: --workspace "+other+" is not used") || !strings.Contains(errs, "trellis serve --workspace "+ws+","+other) {
		t.Fatalf("--workspace with a server running: exit %d, stderr %q", code, errs)
	}
}

// TestVineFileNamedFromAnotherDirectory: without a server, a VINE file the
// user names on the command line works from any directory (`trellis vine
// next ../plans/x.vine`); its references stay inside the file's own
// directory, and a running server still decides by its own roots.
func TestVineFileNamedFromAnotherDirectory(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	plans, work, data := filepath.Join(base, "plans"), filepath.Join(base, "work"), t.TempDir()
	for _, d := range []string{plans, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	plan := "vine 1.2.0\n---\n[root] Ship (notstarted)\n-> a\n---\n[a] A (notstarted)\n"
	if err := os.WriteFile(filepath.Join(plans, "x.vine"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runIn(t, work, "vine", "next", "../plans/x.vine", "--data", data)
	if code != 0 || !strings.Contains(out, "ready to start") || !strings.Contains(out, "A") {
		t.Fatalf("vine next ../plans/x.vine from another directory: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runIn(t, work, "vine", "claim", "../plans/x.vine", "--agent", "agent-1", "--data", data)
	if code != 0 || !strings.Contains(out, "claimed a") {
		t.Fatalf("vine claim ../plans/x.vine: exit %d\n%s%s", code, out, errOut)
	}
	got, err := os.ReadFile(filepath.Join(plans, "x.vine"))
	if err != nil || !strings.Contains(string(got), "[a] A (started)") {
		t.Fatalf("the named file was not rewritten with the claim: %v\n%s", err, got)
	}
	// A file the command line does not name (a path built from a request)
	// is still held to the roots: a reference escaping the file's
	// directory is refused.
	esc := "vine 1.2.0\n---\n[root] Ship (notstarted)\n-> r\n---\n[r] R (reference)\nvine: ../../outside.vine\n"
	if err := os.WriteFile(filepath.Join(plans, "esc.vine"), []byte(esc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(base), "outside.vine"), []byte(plan), 0o644); err == nil {
		t.Cleanup(func() { _ = os.Remove(filepath.Join(filepath.Dir(base), "outside.vine")) })
	}
	code, out, errOut = runIn(t, work, "vine", "expand", "../plans/esc.vine", "r", "../../outside.vine", "--data", data)
	if code == 0 || !strings.Contains(errOut, "outside the workspace roots") {
		t.Fatalf("a reference leaving the named file's directory must be refused: exit %d\n%s%s", code, out, errOut)
	}
}
