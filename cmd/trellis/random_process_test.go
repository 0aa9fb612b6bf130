package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// The randomized multi-process test: a serve process, worker processes
// (local pools and a token pool, with different leases), a driver adding
// tasks (single and bulk, priorities, delays, prerequisites, unique keys,
// flaky tasks), cancelling, pausing and resuming, killing a worker and the
// serve with SIGKILL and stopping the serve for a while (SIGSTOP), and
// queue next agents (CLI processes with short leases) that vanish (exit
// without finishing, or killed with SIGKILL while they claim) or
// heartbeat and finish. The checker reads only the log and the ledger
// the handlers and agents append to. A run is reproduced by its number
// (printed on failure): the driver's choices follow from it (the
// processes' timing does not).
var (
	randomNumber   = flag.Uint64("trellis.random.number", 0, "run number of TestRandomizedProcesses (0: a new one; also TRELLIS_RANDOM_NUMBER)")
	randomDuration = flag.Duration("trellis.random.duration", 0, "how long TestRandomizedProcesses drives its processes (default 6s)")
)

// randomWorker is one worker process of the randomized test.
type randomWorker struct {
	args []string
	p    *proc
}

// randomRun is what the driver of a randomized run tells the checker.
type randomRun struct {
	order []string // acknowledged task ids, in add order
	// plain: tasks added with no delay and no prerequisite, which are
	// claimed in add order within their priority (see claimOrderProblems).
	plain    map[string]bool
	priority map[string]int
	// serveKills are when serve was killed (SIGKILL).
	serveKills []time.Time
	// slots is how many slots each worker pool has, by worker id; token
	// pools are the ones whose claims the server makes.
	slots map[string]int
	token map[string]bool
}

// Agents of the randomized run: CLI processes claiming with queue next.
const (
	// goneAgent prefixes the worker id of agents that vanish: their
	// claims must end in lease_expired (or dead, or cancelled).
	goneAgent = "gone-"
	// maxAgents is how many agents run at once.
	maxAgents = 2
)

func TestRandomizedProcesses(t *testing.T) {
	t.Parallel()
	number := *randomNumber
	if env := os.Getenv("TRELLIS_RANDOM_NUMBER"); number == 0 && env != "" {
		n, err := strconv.ParseUint(env, 10, 64)
		if err != nil {
			t.Fatalf("TRELLIS_RANDOM_NUMBER: %v", err)
		}
		number = n
	}
	if number == 0 {
		number = uint64(time.Now().UnixNano())
	}
	t.Logf("run %d", number)
	defer func() {
		if t.Failed() {
			t.Logf("reproduce with: go test ./cmd/trellis -run TestRandomizedProcesses -trellis.random.number=%d", number)
		}
	}()
	rng := rand.New(rand.NewPCG(number, number^0x9e3779b97f4a7c15))
	dur := *randomDuration
	if dur <= 0 {
		dur = 6 * time.Second
	}

	begin := time.Now()
	phase := func(what string) { t.Logf("%s: %s", time.Since(begin).Round(time.Millisecond), what) }
	data, addr := t.TempDir(), freeAddr(t)
	serve := serveAt(t, data, addr)
	phase("serve up")
	url := "nats://" + addr
	client, nc := reconnectingClient(t, url)
	ctx := context.Background()
	const queue = "rand"
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	// Each run: "<task id> <unix time> <attempt>"; a flaky task fails its
	// first attempt.
	handler := fmt.Sprintf(`echo "$TRELLIS_TASK_ID $(date +%%s.%%N) $TRELLIS_ATTEMPT" >> %s; `+
		`if grep -q flaky && [ "$TRELLIS_ATTEMPT" = 1 ]; then exit 1; fi; sleep 0.02`, ledger)
	workers := []*randomWorker{
		{args: workerArgs(url, queue, "wa", "--concurrency", "2", "--lease", "3s", "--backoff", "100ms", "--exec", handler)},
		{args: workerArgs(url, queue, "wb", "--concurrency", "1", "--lease", "5s", "--backoff", "100ms", "--claim-window", "-1s", "--exec", handler)},
		// A token pool: on a server without authentication any token
		// makes the worker go through the server's API.
		{args: workerArgs(url, queue, "wt", "--concurrency", "2", "--token", "random-pool", "--exec", handler)},
	}
	rr := &randomRun{plain: map[string]bool{}, priority: map[string]int{},
		slots: map[string]int{"wa": 2, "wb": 1, "wt": 2}, token: map[string]bool{"wt": true}}
	for _, w := range workers {
		w.p = startProc(t, w.args...)
	}

	// retry repeats a call until it succeeds (the server may be down).
	retry := func(what string, call func() error) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			err := call()
			if err == nil {
				return
			}
			code := trellis.ErrorCode(err)
			if code != trellis.CodeUnavailable && code != trellis.CodeInternal {
				t.Fatalf("%s: %v", what, err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: still failing: %v", what, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	acked := map[string]bool{}
	var order []string               // acknowledged ids, in order
	depended := map[string]bool{}    // prerequisites: never cancelled
	cancelAsked := map[string]bool{} // never made a prerequisite
	cancellable := func() string {
		for tries := 0; tries < 10 && len(order) > 0; tries++ {
			if id := order[rng.IntN(len(order))]; !depended[id] {
				return id
			}
		}
		return ""
	}
	n, flaky := 0, 0
	newRequest := func() trellis.AddTaskRequest {
		n++
		r := trellis.AddTaskRequest{Queue: queue, Objective: fmt.Sprintf("unit %d", n), MaxAttempts: 3,
			IdempotencyKey: fmt.Sprintf("k%d", n), Priority: 1 + rng.IntN(trellis.MaxPriority)}
		if rng.IntN(6) == 0 {
			r.Objective += " flaky"
			flaky++
		}
		if rng.IntN(6) == 0 {
			r.Delay = []string{"300ms", "1s", "2s"}[rng.IntN(3)]
		}
		if rng.IntN(6) == 0 {
			r.UniqueKey = "u" + strconv.Itoa(rng.IntN(4))
		}
		if rng.IntN(5) == 0 && len(order) > 0 {
			if p := order[rng.IntN(len(order))]; !cancelAsked[p] {
				r.After = []string{p}
			}
		}
		return r
	}
	remember := func(r trellis.AddTaskRequest, task *trellis.Task) {
		for _, p := range r.After {
			depended[p] = true
		}
		if !acked[task.TaskID] {
			acked[task.TaskID] = true
			order = append(order, task.TaskID)
			rr.plain[task.TaskID] = r.Delay == "" && len(r.After) == 0
			rr.priority[task.TaskID] = r.Priority
		}
		if r.UniqueKey != "" {
			depended[task.TaskID] = true // a key's task may be returned to a later add
		}
	}

	// One SIGKILL of a worker and one of serve at moments the run number
	// picks; a longer run has more.
	rounds := max(1, int(dur/(6*time.Second)))
	type fault struct {
		at    time.Duration
		kind  string        // "worker", "serve" (SIGKILL), "pause" (serve SIGSTOP)
		pause time.Duration // how long a pause lasts
	}
	var faults []fault
	for i := 0; i < rounds; i++ {
		faults = append(faults, fault{at: time.Duration(rng.Int64N(int64(dur))), kind: "worker"},
			fault{at: time.Duration(rng.Int64N(int64(dur))), kind: "serve"},
			fault{at: time.Duration(rng.Int64N(int64(dur))), kind: "pause", pause: time.Second + time.Duration(rng.Int64N(int64(3*time.Second)))})
	}
	sort.Slice(faults, func(a, b int) bool { return faults[a].at < faults[b].at })

	// Agents: each a `queue next` process with a short lease. "vanish"
	// claims and exits without finishing; "killed" is killed (SIGKILL)
	// while it claims (its claim may or may not be made); "finish"
	// records its run in the ledger, heartbeats twice and finishes. At
	// most maxAgents run at once (another one is skipped).
	bin := trellisBinary(t)
	agentSlots := make(chan struct{}, maxAgents)
	var agentsRunning sync.WaitGroup
	agents, agentN := map[string]int{}, 0
	agent := func(kind, worker, lease string, killAfter time.Duration) {
		select {
		case agentSlots <- struct{}{}:
		default:
			return
		}
		agents[kind]++
		agentsRunning.Add(1)
		go func() {
			defer agentsRunning.Done()
			defer func() { <-agentSlots }()
			actx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			call := func(args ...string) *exec.Cmd {
				c := exec.CommandContext(actx, bin, append(args, "--nats-url", url)...)
				c.Stdout = &bytes.Buffer{}
				return c
			}
			next := call("queue", "next", "--queue", queue, "--worker", worker, "--lease", lease, "--json")
			if err := next.Start(); err != nil {
				t.Errorf("agent %s: %v", worker, err)
				return
			}
			if kind == "killed" {
				time.Sleep(killAfter)
				_ = next.Process.Signal(syscall.SIGKILL)
				_ = next.Wait()
				return
			}
			if next.Wait() != nil {
				return // no server answering (killed, stopped): the agent gives up
			}
			var task trellis.Task
			if json.Unmarshal(next.Stdout.(*bytes.Buffer).Bytes(), &task) != nil || task.TaskID == "" || kind == "vanish" {
				return
			}
			f, err := os.OpenFile(ledger, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
			if err != nil {
				t.Errorf("agent %s: %v", worker, err)
				return
			}
			_, _ = fmt.Fprintf(f, "%s %.9f %d\n", task.TaskID, float64(time.Now().UnixNano())/1e9, task.Attempts)
			_ = f.Close()
			for hb := 0; hb < 2; hb++ {
				time.Sleep(300 * time.Millisecond)
				if call("queue", "heartbeat", task.TaskID, "--worker", worker).Run() != nil {
					return // lost its claim (a server stopped past its lease): it stops
				}
			}
			_ = call("queue", "done", task.TaskID, "--worker", worker, "--what-was-done", "an agent did it").Run()
		}()
	}
	paused := false
	phase("workers started")
	start := time.Now()
	for time.Since(start) < dur {
		if len(faults) > 0 && time.Since(start) >= faults[0].at {
			f := faults[0]
			faults = faults[1:]
			switch f.kind {
			case "serve":
				t.Logf("%s: SIGKILL serve", time.Since(start).Round(time.Millisecond))
				rr.serveKills = append(rr.serveKills, time.Now())
				_ = serve.cmd.Process.Signal(syscall.SIGKILL)
				_ = serve.wait(t, 30*time.Second)
				serve = serveAt(t, data, addr)
			case "pause":
				// Writes sent meanwhile are stored late: after their
				// senders may have given up on them.
				t.Logf("%s: SIGSTOP serve for %s", time.Since(start).Round(time.Millisecond), f.pause.Round(time.Millisecond))
				_ = serve.cmd.Process.Signal(syscall.SIGSTOP)
				time.Sleep(f.pause)
				_ = serve.cmd.Process.Signal(syscall.SIGCONT)
			default:
				w := workers[rng.IntN(len(workers))]
				t.Logf("%s: SIGKILL worker %s", time.Since(start).Round(time.Millisecond), w.args[6])
				_ = w.p.cmd.Process.Signal(syscall.SIGKILL)
				_ = w.p.wait(t, 30*time.Second)
				w.p = startProc(t, w.args...)
			}
			continue
		}
		switch op := rng.IntN(100); {
		case op < 50:
			r := newRequest()
			var task *trellis.Task
			retry("add", func() (err error) { task, err = client.Add(ctx, r); return err })
			remember(r, task)
		case op < 62:
			var req trellis.AddManyRequest
			for i := 1 + rng.IntN(8); i > 0; i-- {
				r := newRequest()
				r.UniqueKey = ""
				req.Tasks = append(req.Tasks, r)
			}
			var res *trellis.AddManyResult
			retry("add many", func() (err error) { res, err = client.AddMany(ctx, req); return err })
			if len(res.Errors) > 0 {
				t.Fatalf("add many: %v", res.Errors)
			}
			for i, task := range res.Tasks {
				remember(req.Tasks[i], task)
			}
		case op < 75:
			if id := cancellable(); id != "" {
				cancelAsked[id] = true
				retry("cancel", func() error {
					_, err := client.Cancel(ctx, trellis.CancelRequest{TaskID: id, Reason: "random"})
					if trellis.ErrorCode(err) == trellis.CodeConflict {
						return nil // it ended first
					}
					return err
				})
			}
		case op < 81:
			action := "pause"
			if paused {
				action = "resume"
			}
			retry(action, func() error {
				_, err := client.Control(ctx, trellis.ControlRequest{Queue: queue, Action: action})
				return err
			})
			paused = !paused
		case op < 87:
			agentN++
			switch kind := []string{"vanish", "killed", "finish"}[rng.IntN(3)]; kind {
			case "finish":
				agent(kind, fmt.Sprint("agent-", agentN), "3s", 0)
			default:
				agent(kind, fmt.Sprint(goneAgent, agentN), []string{"1s", "2s"}[rng.IntN(2)], time.Duration(rng.IntN(400))*time.Millisecond)
			}
		}
		time.Sleep(time.Duration(10+rng.IntN(60)) * time.Millisecond)
	}
	agentsRunning.Wait()
	if paused {
		retry("resume", func() error {
			_, err := client.Control(ctx, trellis.ControlRequest{Queue: queue, Action: "resume"})
			return err
		})
	}
	rr.order = order
	phase(fmt.Sprintf("driven: %d tasks acknowledged (%d add requests, %d of them failing their first attempt); agents %v", len(order), n, flaky, agents))

	// Every acknowledged add ends.
	waitFor(t, 180*time.Second, "acknowledged tasks did not all end", func() bool {
		for _, id := range order {
			task, err := client.Show(ctx, id)
			if err != nil || !task.Status.Terminal() {
				return false
			}
		}
		return true
	})

	phase("every task ended")
	checkRandomRun(t, nc, rr, ledger)
	phase("log and ledger checked")

	// audit verify OK.
	if code, out, errs := cli(t, "audit", "verify", "--nats-url", url, "--json"); code != 0 || !strings.Contains(out, `"ok": true`) {
		dumpQueueLog(t, nc)
		t.Fatalf("audit verify: exit %d\n%s%s", code, out, errs)
	}
	phase("audit verify ok")
	// Replay == live: the board before and after a rebuild from the log.
	live := boardOf(t, client, queue)
	statuses := map[string]int{}
	for _, v := range live {
		statuses[strings.Split(v, "/")[0]]++
	}
	t.Logf("tasks by status: %v", statuses)
	retry("replay", func() error { _, err := client.Replay(ctx); return err })
	if replayed := boardOf(t, client, queue); !mapsEqual(live, replayed) {
		t.Fatalf("the board rebuilt from the log differs from the live one:\nlive     %v\nreplayed %v", live, replayed)
	}
	phase("replay == live")
}

// boardOf lists a queue's tasks as "status/attempts" by id.
func boardOf(t *testing.T, c trellis.QueueService, queue string) map[string]string {
	t.Helper()
	out := map[string]string{}
	cursor := ""
	for {
		l, err := c.List(context.Background(), trellis.ListRequest{Queue: queue, Limit: trellis.MaxListLimit, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.Tasks {
			out[r.TaskID] = fmt.Sprintf("%s/%d", r.Status, r.Attempts)
		}
		if l.NextCursor == "" {
			return out
		}
		cursor = l.NextCursor
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// checkRandomRun checks a randomized run from the log and the ledger:
// every acknowledged add is on the log and ended exactly once (one
// terminal event, at most one completion); no claim was made while
// another was live (a new claim follows the last one's end: an outcome, a
// release or its lease expired); every claim of a vanished agent ended in
// lease_expired (or dead, or cancelled: its expiry decided so); no
// handler started after its task's cancel was recorded; every completed
// task ran; plain tasks were claimed in add order within their priority
// (see claimOrderProblems).
func checkRandomRun(t *testing.T, nc *nats.Conn, rr *randomRun, ledgerPath string) {
	order := rr.order
	t.Helper()
	store, err := events.NewStore(nc, events.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	byTask := map[string][]events.Recorded{}
	err = store.Read(context.Background(), events.StreamQueue, "", 0, func(rec events.Recorded) error {
		if rec.AggregateID != "" {
			byTask[rec.AggregateID] = append(byTask[rec.AggregateID], rec)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string][]float64{}
	lines, _ := os.ReadFile(ledgerPath)
	for _, l := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		at, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			t.Fatalf("ledger line %q: %v", l, err)
		}
		runs[f[0]] = append(runs[f[0]], at)
	}
	// Handlers may have started up to this long before their pool's
	// decision reached the log (a claim held unrecorded while a cancel
	// is recorded: see taskqueue.Hold).
	const startSlack = 5.0
	var problems []string
	var claims []firstClaim
	skipped := map[string]int{} // first claims left out of the order check, by why
	vanished := 0
	for index, id := range order {
		recs := byTask[id]
		if len(recs) == 0 || recs[0].Type != taskqueue.Added {
			problems = append(problems, id+": acknowledged but not added on the log")
			continue
		}
		terminal, completed := 0, 0
		claimedBy, gone := "", false
		cancelAt := 0.0
		first := true
		for _, r := range taskqueue.ExpandClaims(recs) {
			if gone && endsClaim(r.Type) {
				// A vanished agent's claim ends: only its expiry may end it.
				if r.Type != taskqueue.LeaseExpired && r.Type != taskqueue.Dead && r.Type != taskqueue.Cancelled {
					problems = append(problems, fmt.Sprintf("%s: the claim of vanished agent %s ended in %s (seq %d), not in its lease's expiry", id, claimedBy, r.Type, r.Seq))
				}
				gone = false
			}
			switch r.Type {
			case taskqueue.Claimed:
				if claimedBy != "" {
					problems = append(problems, fmt.Sprintf("%s: claimed by %s while %s's claim was live (seq %d)", id, r.Actor, claimedBy, r.Seq))
				}
				claimedBy = r.Actor + "@" + strconv.FormatUint(r.Seq, 10)
				if gone = strings.HasPrefix(r.Actor, goneAgent); gone {
					vanished++
				}
				if first {
					c, why := orderedClaim(r, recs[0], rr)
					if why == "" && straddles(recs[0].Time, c.at, rr.serveKills) {
						why = "added before a serve kill, claimed after"
					}
					if why == "" {
						c.task, c.index = id, index
						claims = append(claims, c)
					} else {
						skipped[why]++
					}
					first = false
				}
			case taskqueue.LeaseExpired, taskqueue.Released, taskqueue.AttemptFailed, taskqueue.Requeued:
				claimedBy = ""
			case taskqueue.Completed, taskqueue.Failed, taskqueue.Dead, taskqueue.Cancelled:
				claimedBy = ""
				terminal++
				if r.Type == taskqueue.Completed {
					completed++
				}
			}
			if (r.Type == taskqueue.CancelRequested || r.Type == taskqueue.Cancelled) && cancelAt == 0 {
				cancelAt = float64(r.Time.UnixNano()) / 1e9
			}
		}
		if terminal != 1 || completed > 1 {
			problems = append(problems, fmt.Sprintf("%s: %d terminal events, %d completions", id, terminal, completed))
		}
		if completed == 1 && len(runs[id]) == 0 {
			problems = append(problems, id+": completed without its handler running")
		}
		for _, at := range runs[id] {
			if cancelAt > 0 && at > cancelAt+startSlack {
				problems = append(problems, fmt.Sprintf("%s: a handler started %.1fs after its cancel was recorded", id, at-cancelAt))
			}
		}
	}
	executions, again := 0, 0
	for _, at := range runs {
		executions += len(at)
		if len(at) > 1 {
			again++
		}
	}
	t.Logf("%d executions; %d tasks ran more than once (failed first attempts, expired leases, lost outcomes: at least once); %d claims of vanished agents, each ended by its lease's expiry",
		executions, again, vanished)
	// Claims in add order: a slot of a local pool claims in add order; a
	// token pool's slot may have one claim made late; across all of them
	// a claim waits at most for what every claimant holds ahead of it.
	globalBound := maxAgents
	for pool, n := range rr.slots {
		globalBound += n
		if !rr.token[pool] {
			globalBound += max(n, 32) // what a local pool fetches ahead at most (workers.fetchAhead)
		}
	}
	slotBound := func(slot string) int {
		if pool, _, ok := strings.Cut(slot, "/"); ok && rr.token[pool] {
			return 1
		}
		return 0
	}
	orderProblems := claimOrderProblems(claims, slotBound, globalBound)
	t.Logf("claim order: %d first claims checked, %d out of order; left out: %v", len(claims), len(orderProblems), skipped)
	problems = append(problems, orderProblems...)
	if len(problems) > 0 {
		if len(problems) > 20 {
			problems = append(problems[:20], fmt.Sprintf("... %d more", len(problems)-20))
		}
		t.Fatalf("%d problems:\n%s", len(problems), strings.Join(problems, "\n"))
	}
}

// orderedClaim reads a task's first claim r for the order check, or
// says why it is left out: only a plain task claimed through its add's
// first delivery counts.
func orderedClaim(r, added events.Recorded, rr *randomRun) (firstClaim, string) {
	var p taskqueue.ClaimedPayload
	switch err := r.DecodePayload(&p); {
	case err != nil:
		return firstClaim{}, "undecodable"
	case !rr.plain[r.AggregateID]:
		return firstClaim{}, "delayed or with a prerequisite"
	case p.DispatchSeq != added.Seq:
		return firstClaim{}, "dispatched by another event"
	case p.Delivery != 1:
		return firstClaim{}, "redelivered"
	}
	at := r.Time
	if p.At != nil {
		at = *p.At
	}
	return firstClaim{priority: rr.priority[r.AggregateID], by: p.Worker, at: at}, ""
}

// endsClaim reports whether an event of type typ ends a claim.
func endsClaim(typ string) bool {
	switch typ {
	case taskqueue.LeaseExpired, taskqueue.Released, taskqueue.AttemptFailed, taskqueue.Requeued,
		taskqueue.Completed, taskqueue.Failed, taskqueue.Dead, taskqueue.Cancelled:
		return true
	}
	return false
}

// straddles reports whether a serve was killed between a task's add and
// its claim.
func straddles(added, claimed time.Time, kills []time.Time) bool {
	for _, k := range kills {
		if k.After(added) && k.Before(claimed) {
			return true
		}
	}
	return false
}

// dumpQueueLog logs the queue stream's messages with the headers audit
// verify reads (for a failing run's report).
func dumpQueueLog(t *testing.T, nc *nats.Conn) {
	t.Helper()
	store, err := events.NewStore(nc, events.StoreConfig{})
	if err != nil {
		t.Log(err)
		return
	}
	err = store.Scan(context.Background(), events.StreamQueue, events.ScanRange{}, func(m events.Message) error {
		t.Logf("seq %d %s %s id=%s msgid=%s scheduler=%s batch=%s/%d stored=%s", m.Seq, m.Subject, m.Type, m.ID, m.MsgID, m.Scheduler, m.BatchID, m.BatchSeq, m.Stored.Format("15:04:05.000"))
		return nil
	})
	if err != nil {
		t.Log(err)
	}
}
