package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trellis/trellis"
)

// TestAgentClaimLeaseAcrossProcesses: agents are CLI calls against a
// `trellis serve --auth` process, each with its own worker token. Agent 1
// claims with `queue next --lease 2s` and vanishes (never heartbeats);
// the server is killed (SIGKILL) and started again on the same data.
// After the lease, agent 2's `queue next` gets the task: the log records
// lease_expired (an attempt) before agent 2's claim, and agent 1's
// heartbeat is refused. Agent 3 heartbeats (its claim survives another
// agent's polling past its lease); a foreign heartbeat and a worker's
// release are refused; the admin releases it (queued, attempt not
// counted); heartbeats on an unknown or finished task give clear errors.
func TestAgentClaimLeaseAcrossProcesses(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	_, _, serve := serveProc(t, data, "--auth")
	raw, err := os.ReadFile(filepath.Join(data, "auth", "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	admin := []string{"--data", data, "--token", strings.TrimSpace(string(raw))}
	as := func(name string) []string {
		code, out, errs := cli(t, append(admin, "token", "create", "--name", name, "--role", "worker", "--queue", "agents", "--json")...)
		if code != 0 {
			t.Fatalf("token create: exit %d %s", code, errs)
		}
		var created map[string]string
		mustJSON(t, out, &created)
		return []string{"--data", data, "--token", created["token"]}
	}
	a1, a2, a3 := as("agent-1"), as("agent-2"), as("agent-3")
	add := func(obj string) trellis.Task {
		return cliTask(t, append(admin, "queue", "add", "--queue", "agents", "--objective", obj, "--max-attempts", "3")...)
	}
	next := func(agent []string, lease string) *trellis.Task {
		t.Helper()
		code, out, errs := cli(t, append(agent, "queue", "next", "--queue", "agents", "--lease", lease, "--json")...)
		if code != 0 {
			t.Fatalf("queue next: exit %d %s", code, errs)
		}
		if strings.TrimSpace(out) == "null" {
			return nil
		}
		var task trellis.Task
		mustJSON(t, out, &task)
		return &task
	}
	heartbeat := func(agent []string, id string) (int, string) {
		code, _, errs := cli(t, append(agent, "queue", "heartbeat", id)...)
		return code, errs
	}

	task := add("forgotten by its agent")
	got := next(a1, "2s")
	if got == nil || got.TaskID != task.TaskID || got.Lease == nil || got.Lease.ExpiresAt == nil || got.Lease.LeaseMS != 2000 {
		t.Fatalf("agent-1's claim: %+v; want the task with a 2 s lease", got)
	}

	// The server dies and comes back: the lease's end is JetStream's and
	// the log's, no process's timer.
	_ = serve.Process.Signal(syscall.SIGKILL)
	_, _, serve = serveProc(t, data, "--auth")

	var again *trellis.Task
	deadline := time.Now().Add(60 * time.Second)
	for again == nil && time.Now().Before(deadline) {
		again = next(a2, "1m")
	}
	if again == nil || again.TaskID != task.TaskID || again.ClaimedBy != "agent-2" || again.Attempts != 2 {
		t.Fatalf("after agent-1's lease: %+v; want the task claimed by agent-2 as attempt 2", again)
	}
	code, out, errs := cli(t, append(admin, "audit", task.TaskID, "--json")...)
	if code != 0 {
		t.Fatalf("audit: exit %d %s", code, errs)
	}
	if i, j := strings.Index(out, `"lease_expired"`), strings.LastIndex(out, `"claimed"`); i < 0 || j < i {
		t.Fatalf("the history has no lease_expired before agent-2's claim:\n%s", out)
	}
	if code, errs := heartbeat(a1, task.TaskID); code != 4 || !strings.Contains(errs, "agent-2") {
		t.Fatalf("agent-1's heartbeat after its lease: exit %d %s; want 4 (conflict) naming agent-2", code, errs)
	}

	// Agent 3 keeps its claim past its lease by heartbeating.
	kept := add("kept by heartbeats")
	if got := next(a3, "5s"); got == nil || got.TaskID != kept.TaskID {
		t.Fatalf("agent-3's claim: %+v", got)
	}
	end := time.Now().Add(7 * time.Second) // past the lease's first end
	for time.Now().Before(end) {
		if code, errs := heartbeat(a3, kept.TaskID); code != 0 {
			t.Fatalf("heartbeat: exit %d %s", code, errs)
		}
		if stolen := next(a1, "1m"); stolen != nil {
			t.Fatalf("a heartbeated claim was taken: %+v", stolen)
		}
	}
	if shown := cliTask(t, append(admin, "queue", "show", kept.TaskID)...); shown.ClaimedBy != "agent-3" || shown.Attempts != 1 {
		t.Fatalf("after heartbeats: %+v; want still agent-3's, attempt 1", shown)
	}

	// Refusals: a foreign worker, a worker releasing, bad ids.
	if code, errs := heartbeat(a1, kept.TaskID); code != 4 {
		t.Fatalf("agent-1 heartbeating agent-3's claim: exit %d %s; want 4", code, errs)
	}
	if code, _, errs := cli(t, append(a1, "queue", "heartbeat", kept.TaskID, "--worker", "agent-3")...); code != 6 {
		t.Fatalf("agent-1 heartbeating as agent-3: exit %d %s; want 6 (unauthorized)", code, errs)
	}
	if code, _, errs := cli(t, append(a3, "queue", "release", kept.TaskID)...); code != 6 {
		t.Fatalf("a worker releasing: exit %d %s; want 6 (admin only)", code, errs)
	}
	if code, errs := heartbeat(a3, "01JZZZZZZZZZZZZZZZZZZZZZZZ"); code != 3 {
		t.Fatalf("heartbeat of an unknown task: exit %d %s; want 3", code, errs)
	}
	if code, errs := heartbeat(a3, "not-an-id"); code != 2 {
		t.Fatalf("heartbeat of a malformed id: exit %d %s; want 2", code, errs)
	}

	rel := cliTask(t, append(admin, "queue", "release", kept.TaskID, "--reason", "agent-3 is stuck")...)
	if rel.Status != trellis.StatusQueued || rel.Attempts != 0 || rel.ClaimedBy != "" {
		t.Fatalf("release: %+v; want queued, attempt not counted", rel)
	}
	if code, errs := heartbeat(a3, kept.TaskID); code != 4 {
		t.Fatalf("heartbeat after release: exit %d %s; want 4", code, errs)
	}
	code, _, errs = cli(t, append(a2, "queue", "done", again.TaskID, "--what-was-done", "did it")...)
	if code != 0 {
		t.Fatalf("done: exit %d %s", code, errs)
	}
	if code, errs := heartbeat(a2, again.TaskID); code != 4 || !strings.Contains(errs, "done") {
		t.Fatalf("heartbeat of a finished task: exit %d %s; want 4 saying it is done", code, errs)
	}
	// audit verify reads the log itself: stop the server, then it runs in
	// this process on the data directory.
	_ = serve.Process.Signal(syscall.SIGTERM)
	_, _ = serve.Process.Wait()
	if code, out, errs := cli(t, "--data", data, "audit", "verify"); code != 0 {
		t.Fatalf("audit verify: exit %d\n%s%s", code, out, errs)
	}
}

// expiredOnce matches a history whose every claim but the last ended in
// one lease_expired.
var expiredOnce = regexp.MustCompile(`^added claimed( lease_expired claimed)+$`)

// TestAgentLeaseExpiryRecordedOnceAcrossServers: two `trellis serve`
// processes share one NATS (the second attached with --nats-url), and
// the CLI's requests go to either. Six agents claim with a 1 s lease and
// vanish, and a seventh on a task with one attempt. While nobody works
// the queue, the servers' sweepers record the expiries: the board lists
// the six tasks queued again and the seventh dead (before the sweeper
// they stayed claimed until the queue was next worked). Then four agents
// claim concurrently through both servers until every task is theirs.
// Each task's history holds exactly one lease_expired before each claim
// after the first, whichever server recorded it.
func TestAgentLeaseExpiryRecordedOnceAcrossServers(t *testing.T) {
	t.Parallel()
	dataA := t.TempDir()
	infoA, _, _ := serveProc(t, dataA)
	url := infoA.NATSURL
	startProc(t, "serve", "--nats-url", url, "--data", t.TempDir(), "--http-addr", "", "--nats-addr", "127.0.0.1:0")
	via := []string{"--nats-url", url}
	var ids []string
	for i := 0; i < 6; i++ {
		task := cliTask(t, append(via, "queue", "add", "--queue", "shared", "--objective", fmt.Sprint("abandoned ", i))...)
		ids = append(ids, task.TaskID)
	}
	// Claims that run late may already find an earlier one expired:
	// that one is then claimed again (after its lease_expired), and the
	// history check below allows it.
	for i := range ids {
		code, _, errs := cli(t, append(via, "queue", "next", "--queue", "shared", "--worker", fmt.Sprint("gone-", i), "--lease", "1s", "--json")...)
		if code != 0 {
			t.Fatalf("claim %d: exit %d %s", i, code, errs)
		}
	}
	once := cliTask(t, append(via, "queue", "add", "--queue", "single", "--objective", "one attempt", "--max-attempts", "1")...)
	if got := cliTask(t, append(via, "queue", "next", "--queue", "single", "--worker", "gone-once", "--lease", "1s")...); got.TaskID != once.TaskID {
		t.Fatalf("the one-attempt task's claim: %+v", got)
	}
	// Nobody works the queue: the sweepers record the expiries.
	var board string
	defer func() {
		if t.Failed() {
			t.Logf("the board last seen: %s", board)
		}
	}()
	waitFor(t, 60*time.Second, "the board never showed the abandoned claims expired", func() bool {
		code, out, _ := cli(t, append(via, "queue", "list", "--json")...)
		if code != 0 {
			return false
		}
		board = out
		var l trellis.TaskList
		mustJSON(t, out, &l)
		want := map[string]trellis.Status{once.TaskID: trellis.StatusDead}
		for _, id := range ids {
			want[id] = trellis.StatusQueued
		}
		n := 0
		for _, r := range l.Tasks {
			if s, ok := want[r.TaskID]; ok && r.Status == s && (s != trellis.StatusQueued || r.ClaimedBy == "") {
				n++
			}
		}
		return n == len(want)
	})
	code, out, errs := cli(t, append(via, "audit", once.TaskID, "--json")...)
	if code != 0 || strings.Count(out, `"dead"`) != 1 || strings.Contains(out, `"lease_expired"`) {
		t.Fatalf("audit of the one-attempt task: exit %d %s\n%s; want one dead event", code, errs, out)
	}
	var mu sync.Mutex
	taken := map[string]string{}
	var wg sync.WaitGroup
	deadline := time.Now().Add(90 * time.Second)
	for a := 0; a < 4; a++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				mu.Lock()
				all := len(taken) == len(ids)
				mu.Unlock()
				if all {
					return
				}
				var out, errb bytes.Buffer
				worker := fmt.Sprint("agent-", a)
				if code := run(append(via, "queue", "next", "--queue", "shared", "--worker", worker, "--json"), strings.NewReader(""), &out, &errb); code != 0 {
					t.Errorf("%s: queue next: exit %d %s", worker, code, errb.String())
					return
				}
				if strings.TrimSpace(out.String()) == "null" {
					continue
				}
				var task trellis.Task
				if err := json.Unmarshal(out.Bytes(), &task); err != nil {
					t.Errorf("%s: %v", worker, err)
					return
				}
				if !strings.HasPrefix(task.ClaimedBy, "agent-") || task.Attempts < 2 {
					t.Errorf("%s got %+v; want an abandoned task as its second attempt or later", worker, task)
				}
				mu.Lock()
				if prev, ok := taken[task.TaskID]; ok {
					t.Errorf("task %s claimed again by %s after %s", task.TaskID, worker, prev)
				}
				taken[task.TaskID] = worker
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(taken) != len(ids) {
		t.Fatalf("%d of %d abandoned tasks were claimed again", len(taken), len(ids))
	}
	for _, id := range ids {
		code, out, errs := cli(t, append(via, "audit", id, "--json")...)
		if code != 0 {
			t.Fatalf("audit %s: exit %d %s", id, code, errs)
		}
		var recs []struct {
			Type string `json:"type"`
		}
		mustJSON(t, out, &recs)
		var types []string
		for _, r := range recs {
			types = append(types, r.Type)
		}
		if h := strings.Join(types, " "); !expiredOnce.MatchString(h) {
			t.Errorf("task %s: history %q; want exactly one lease_expired between two claims", id, h)
		}
	}
	if code, out, errs := cli(t, append(via, "audit", "verify")...); code != 0 {
		t.Fatalf("audit verify: exit %d\n%s%s", code, out, errs)
	}
}

// TestQueueAgentLeaseCLI: an operator sets a queue's agent lease with
// `queue lease Q D --agent` against a `trellis serve --auth` process; an
// agent's `queue next` without --lease then holds that lease, with
// --lease its own; `queue controls` shows it; 0 restores the default.
// Bad values, a malformed queue and a worker's token are refused, and
// the setting is unchanged by them.
func TestQueueAgentLeaseCLI(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	_, _, serve := serveProc(t, data, "--auth")
	raw, err := os.ReadFile(filepath.Join(data, "auth", "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	admin := []string{"--data", data, "--token", strings.TrimSpace(string(raw))}
	code, out, errs := cli(t, append(admin, "token", "create", "--name", "agent-1", "--role", "worker", "--queue", "agents", "--json")...)
	if code != 0 {
		t.Fatalf("token create: exit %d %s", code, errs)
	}
	var created map[string]string
	mustJSON(t, out, &created)
	agent := []string{"--data", data, "--token", created["token"]}

	if code, out, errs := cli(t, append(admin, "queue", "lease", "agents", "90s", "--agent")...); code != 0 || !strings.Contains(out, "agent lease 1m30s") {
		t.Fatalf("queue lease --agent: exit %d %s%s", code, out, errs)
	}
	for i := 0; i < 2; i++ {
		cliTask(t, append(admin, "queue", "add", "--queue", "agents", "--objective", fmt.Sprint("step ", i))...)
	}
	if got := cliTask(t, append(agent, "queue", "next", "--queue", "agents")...); got.Lease == nil || got.Lease.LeaseMS != 90000 {
		t.Fatalf("queue next without --lease: %+v; want the queue's 90 s lease", got.Lease)
	}
	if got := cliTask(t, append(agent, "queue", "next", "--queue", "agents", "--lease", "5s")...); got.Lease == nil || got.Lease.LeaseMS != 5000 {
		t.Fatalf("queue next --lease 5s: %+v; want 5 s", got.Lease)
	}
	refused := []struct {
		args []string
		code int
		says string
	}{
		{append(admin, "queue", "lease", "--agent", "agents", "--", "-1s"), 2, "lease_seconds"},
		{append(admin, "queue", "lease", "agents", "500ms", "--agent"), 2, "lease_seconds"},
		{append(admin, "queue", "lease", "agents", "100000h", "--agent"), 2, "lease_seconds"},
		{append(admin, "queue", "lease", "agents", "soon", "--agent"), 2, "duration"},
		{append(admin, "queue", "lease", "no/such", "1m", "--agent"), 2, "queue"},
		{append(agent, "queue", "lease", "agents", "1s", "--agent"), 6, ""},
	}
	for _, r := range refused {
		code, out, errs := cli(t, r.args...)
		if code != r.code || !strings.Contains(errs, r.says) {
			t.Errorf("%v: exit %d %s%s; want %d naming %q", r.args[3:], code, out, errs, r.code, r.says)
		}
	}
	var c trellis.QueueControls
	code, out, errs = cli(t, append(admin, "queue", "controls", "agents", "--json")...)
	if code != 0 {
		t.Fatalf("controls: exit %d %s", code, errs)
	}
	mustJSON(t, out, &c)
	if c.AgentLeaseSeconds != 90 {
		t.Fatalf("after the refusals: %+v; want the 90 s kept", c)
	}
	if code, out, errs := cli(t, append(admin, "queue", "lease", "agents", "0", "--agent")...); code != 0 || !strings.Contains(out, "agent lease 10m0s (default)") {
		t.Fatalf("queue lease 0 --agent: exit %d %s%s", code, out, errs)
	}
	cliTask(t, append(admin, "queue", "add", "--queue", "agents", "--objective", "after the reset")...)
	if got := cliTask(t, append(agent, "queue", "next", "--queue", "agents")...); got.Lease == nil || got.Lease.LeaseMS != trellis.DefaultAgentLease.Milliseconds() {
		t.Fatalf("queue next after the reset: %+v; want the default lease", got.Lease)
	}
	_ = serve.Process.Signal(syscall.SIGTERM)
	_, _ = serve.Process.Wait()
	if code, out, errs := cli(t, "--data", data, "audit", "verify"); code != 0 {
		t.Fatalf("audit verify: exit %d\n%s%s", code, out, errs)
	}
}
