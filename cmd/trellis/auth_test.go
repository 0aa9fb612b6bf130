package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trellis/trellis/server"
)

// serveProc starts `trellis serve` as a process and waits for its
// serve.json; it returns the info, stdout so far, and the process.
func serveProc(t *testing.T, data string, args ...string) (*server.Info, *lockedWriter, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(trellisBinary(t), append([]string{"serve", "--data", data, "--nats-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, args...)...)
	out, errb := &lockedWriter{w: &bytes.Buffer{}}, &lockedWriter{w: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		info, _ := server.ReadInfo(data)
		out.mu.Lock()
		printed := strings.Contains(out.w.String(), "recorded in")
		out.mu.Unlock()
		if info != nil && printed {
			return info, out, cmd
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start: %s", errb.w.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCLIAuthContract: `serve --auth` creates <data>/auth/admin.token (mode
// 0600) and prints its path, never the token; commands without a token, or
// with a bad one, or whose role may not, exit 6; `token create --json`
// prints exactly {"name", "role", "token"}; `token list` shows no token;
// a revoked token exits 6 within 5 s; a worker with a worker token works
// through the server and its events carry its name.
func TestCLIAuthContract(t *testing.T) {
	t.Parallel()
	data, ws := t.TempDir(), t.TempDir()
	info, out, _ := serveProc(t, data, "--auth", "--workspace", ws)
	path := filepath.Join(data, "auth", "admin.token")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin.token: %v %v", fi, err)
	}
	admin, _ := os.ReadFile(path)
	tok := strings.TrimSpace(string(admin))
	out.mu.Lock()
	banner := out.w.String()
	out.mu.Unlock()
	if !strings.Contains(banner, path) || strings.Contains(banner, tok) {
		t.Fatalf("banner must name %s and never print the token:\n%s", path, banner)
	}
	if raw, _ := os.ReadFile(server.InfoPath(data)); strings.Contains(string(raw), tok) {
		t.Fatal("serve.json holds the token")
	}
	d := []string{"--data", data}
	if code, _, errs := cli(t, append(d, "queue", "list")...); code != 6 || !strings.Contains(errs, "token") {
		t.Fatalf("no token: exit %d %s", code, errs)
	}
	if code, _, errs := cli(t, append(d, "--token", "trellis_bogus-bogus-bogus-bogus-bogus-bogus", "queue", "list")...); code != 6 {
		t.Fatalf("bad token: exit %d %s", code, errs)
	}
	code, stdout, errs := cli(t, append(d, "--token", tok, "token", "create", "--name", "r1", "--role", "reader", "--json")...)
	if code != 0 {
		t.Fatalf("token create: %d %s", code, errs)
	}
	var created map[string]string
	mustJSON(t, stdout, &created)
	var keys []string
	for k := range created {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "name,role,token" || created["name"] != "r1" || created["role"] != "reader" || !strings.HasPrefix(created["token"], "trellis_") {
		t.Fatalf("token create --json = %s", stdout)
	}
	reader := created["token"]
	if code, _, _ := cli(t, append(d, "--token", reader, "queue", "list")...); code != 0 {
		t.Fatalf("reader list: exit %d", code)
	}
	if code, _, errs := cli(t, append(d, "--token", reader, "queue", "add", "--objective", "x")...); code != 6 || !strings.Contains(errs, "unauthorized") {
		t.Fatalf("reader add: exit %d %s", code, errs)
	}
	if code, _, _ := cli(t, append(d, "--token", reader, "token", "create", "--name", "r2", "--role", "admin")...); code != 6 {
		t.Fatalf("reader token create: exit %d", code)
	}
	if code, _, errs := cli(t, append(d, "--token", tok, "token", "create", "--name", "bad name", "--role", "reader")...); code != 2 || !strings.Contains(errs, "name") {
		t.Fatalf("bad name: exit %d %s", code, errs)
	}
	code, stdout, _ = cli(t, append(d, "--token", tok, "token", "list", "--json")...)
	if code != 0 || !strings.Contains(stdout, `"r1"`) || !strings.Contains(stdout, `"admin"`) || strings.Contains(stdout, reader) || strings.Contains(stdout, "hash") {
		t.Fatalf("token list: %d %s", code, stdout)
	}
	if code, _, errs := cli(t, append(d, "--token", tok, "token", "revoke", "r1")...); code != 0 {
		t.Fatalf("revoke: %d %s", code, errs)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		if code, _, _ := cli(t, append(d, "--token", reader, "queue", "list")...); code == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a revoked token still works 5 s after the revoke")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, _, _ := cli(t, append(d, "--token", tok, "token", "revoke", "nobody")...); code != 3 {
		t.Fatalf("revoke unknown: exit %d", code)
	}

	// A token holder audits through the API; the commands that read the
	// log itself say why a token may not.
	if code, _, errs := cli(t, append(d, "--token", tok, "audit", "--stream", "queue", "--jsonl")...); code != 0 {
		t.Fatalf("audit --stream with a token: exit %d %s", code, errs)
	}
	for _, args := range [][]string{{"audit", "verify"}, {"audit", "export", "--out", filepath.Join(t.TempDir(), "x.jsonl")}, {"queue", "list", "--as-of", "1m"}} {
		if code, _, errs := cli(t, append(append(d, "--token", tok), args...)...); code != 6 || !strings.Contains(errs, "reads the event log directly") {
			t.Fatalf("%v with a token: exit %d %s", args, code, errs)
		}
	}

	// A worker process with a worker token.
	code, stdout, _ = cli(t, append(d, "--token", tok, "token", "create", "--name", "w1", "--role", "worker", "--queue", "default", "--json")...)
	if code != 0 {
		t.Fatal("create worker token")
	}
	mustJSON(t, stdout, &created)
	worker := created["token"]
	code, stdout, _ = cli(t, append(d, "--token", tok, "queue", "add", "--objective", "remote work", "--json")...)
	if code != 0 {
		t.Fatalf("add: %d", code)
	}
	var task struct {
		TaskID string `json:"task_id"`
	}
	mustJSON(t, stdout, &task)
	p := startProc(t, "worker", "--nats-url", info.NATSURL, "--token", worker, "--queue", "default", "--exec", "cat >/dev/null; echo ok", "--metrics-addr", "")
	if code, _, errs := cli(t, append(d, "--token", worker, "worker", "--queue", "other", "--exec", "true", "--metrics-addr", "")...); code != 6 {
		t.Fatalf("worker on a queue outside its token: exit %d %s", code, errs)
	}
	var events []struct {
		Type  string `json:"type"`
		Actor string `json:"actor"`
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		code, stdout, _ = cli(t, append(d, "--token", tok, "audit", task.TaskID, "--json")...)
		if code == 0 {
			mustJSON(t, stdout, &events)
			if len(events) == 3 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not finish the task: %s\n%s", stdout, p.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if events[0].Actor != "admin" || events[2].Type != "completed" || !strings.HasPrefix(events[1].Actor, "w1/") || events[2].Actor != events[1].Actor {
		t.Fatalf("history: %+v", events)
	}
	// Ingest with a token runs in the server, on a path it reads inside
	// its workspace roots.
	outside := t.TempDir()
	if code, _, errs := cli(t, append(d, "--token", tok, "ingest", outside)...); code != 2 || !strings.Contains(errs, "outside the workspace roots") {
		t.Fatalf("ingest outside the server's workspace: exit %d %s", code, errs)
	}
	repo := filepath.Join(ws, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := cli(t, append(d, "--token", worker, "ingest", repo)...); code != 6 {
		t.Fatalf("ingest with a worker token: exit %d %s", code, errs)
	}
	code, stdout, errs = cli(t, append(d, "--token", tok, "ingest", repo, "--repo", "r", "--json")...)
	if code != 0 || !strings.Contains(stdout, `"files_new": 1`) {
		t.Fatalf("ingest through the server: %d %s %s", code, stdout, errs)
	}
	code, stdout, _ = cli(t, append(d, "--token", tok, "queue", "export")...)
	if code != 0 || strings.Count(stdout, "\n") != 3 {
		t.Fatalf("export through the API: %d %q", code, stdout)
	}
}

// TestCLIServeRefusesExposureWithoutAuth: a non-loopback address without
// --auth is refused (exit 2, naming the address and the way out); with
// --insecure the server starts and warns.
func TestCLIServeRefusesExposureWithoutAuth(t *testing.T) {
	t.Parallel()
	code, _, errs := cli(t, "serve", "--data", t.TempDir(), "--nats-addr", "0.0.0.0:0", "--http-addr", "")
	if code != 2 || !strings.Contains(errs, "nats_addr") || !strings.Contains(errs, "--auth") || !strings.Contains(errs, "--insecure") {
		t.Fatalf("exposed NATS without --auth: exit %d %s", code, errs)
	}
	code, _, errs = cli(t, "serve", "--data", t.TempDir(), "--nats-addr", "127.0.0.1:0", "--http-addr", "0.0.0.0:0")
	if code != 2 || !strings.Contains(errs, "http_addr") {
		t.Fatalf("exposed HTTP without --auth: exit %d %s", code, errs)
	}
	p := startProc(t, "serve", "--data", t.TempDir(), "--nats-addr", "127.0.0.1:0", "--http-addr", "0.0.0.0:0", "--insecure")
	for deadline := time.Now().Add(60 * time.Second); ; {
		lw := p.cmd.Stderr.(*lockedWriter)
		lw.mu.Lock()
		s := lw.w.String()
		lw.mu.Unlock()
		if strings.Contains(s, "WARNING: --insecure") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no warning: %s", s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
