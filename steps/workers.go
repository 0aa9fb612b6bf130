package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cucumber/godog"

	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/workers"
)

// Timings of the workers the steps start: short, so features run fast.
const (
	// workerGrace is how long draining workers let running commands finish.
	workerGrace = 2 * time.Second
	// retryBackoff is the first retry delay (doubling up to 2 s).
	retryBackoff = 100 * time.Millisecond
	// drainWait bounds a drain: grace, the command's kill delay, finishing.
	drainWait = 30 * time.Second
)

func workerSteps() []Definition {
	return []Definition{
		{
			Pattern: `^queue "([^"]*)" has a lease of (\d+) seconds?$`,
			Example: `Given queue "reindex" has a lease of 1 second`,
			Doc: "Sets the lease of the workers the scenario starts on the queue afterwards (default 5 s): how long a claim " +
				"survives without a heartbeat before another worker may take the task over.",
			run: func(w *World) any { return w.setLease },
		},
		{
			Pattern: `^queue "([^"]*)" has a claim window of (\d+) seconds?$`,
			Example: `Given queue "thumbnails" has a claim window of 5 seconds`,
			Doc: "Sets the claim window of the worker pools the scenario starts on the queue afterwards (default 50 ms): a task " +
				"whose handler ends within it is recorded with one event, its outcome carrying its claim. At most a quarter of " +
				"the queue's lease (set a lease first).",
			run: func(w *World) any { return w.setClaimWindow },
		},
		{
			Pattern: `^I start (\d+) workers? "([^"]*)" on queue "([^"]*)" running "([^"]*)"$`,
			Example: `When I start 3 workers "batch" on queue "jobs" running "./export.sh"`,
			Doc: "Starts an in-process worker pool (`trellis worker --exec`) of N slots, NAME/0 ... NAME/N-1. The command runs " +
				"with sh -c in the feature file's directory, the task packet as JSON on stdin, TRELLIS_TASK_ID, TRELLIS_QUEUE, " +
				"TRELLIS_ATTEMPT and TRELLIS_SCENARIO_DIR set. Exit 0 completes the task (a JSON object on the last stdout line " +
				"fills the checkpoint); another exit fails the attempt, retried after 100 ms, 200 ms, ... until max attempts.",
			run: func(w *World) any { return w.startPoolCommand },
		},
		{
			Pattern: `^I start (\d+) workers? "([^"]*)" on queue "([^"]*)" running:$`,
			Example: "When I start 2 workers \"nightly\" on queue \"nightly\" running:\n" +
				"  \"\"\"\n" +
				"  if [ \"$TRELLIS_ATTEMPT\" -lt 2 ]; then echo \"upstream returned 503\" >&2; exit 1; fi\n" +
				"  echo '{\"what_was_done\":\"exported\"}'\n" +
				"  \"\"\"",
			Doc: "The same with a shell script in a doc string.",
			run: func(w *World) any { return w.startPoolScript },
		},
		{
			Pattern: `^I start worker process "([^"]*)" on queue "([^"]*)" running "([^"]*)"$`,
			Example: `When I start worker process "A" on queue "reindex" running "sleep 30"`,
			Doc: "Starts a real `trellis worker` process (one slot, NAME/0) connected to the scenario's NATS, running the " +
				"command as the pool step does. Processes can be killed with kill -9.",
			run: func(w *World) any { return w.startProcessCommand },
		},
		{
			Pattern: `^I start worker process "([^"]*)" on queue "([^"]*)" running:$`,
			Example: "When I start worker process \"A\" on queue \"reindex\" running:\n" +
				"  \"\"\"\n" +
				"  sleep 30\n" +
				"  \"\"\"",
			Doc: "The same with a shell script in a doc string.",
			run: func(w *World) any { return w.startProcessScript },
		},
		{
			Pattern: `^I kill -9 worker process "([^"]*)"$`,
			Example: `When I kill -9 worker process "A"`,
			Doc: "Kills the worker process and the commands it runs with SIGKILL, as a machine crash would: its claims stay " +
				"until their lease expires, then other workers take the tasks over.",
			run: func(w *World) any { return w.kill9 },
		},
		{
			Pattern: `^I drain workers "([^"]*)"$`,
			Example: `When I drain workers "batch"`,
			Doc: "Drains a pool or a process (SIGTERM): no new claims, running commands get 2 s to finish, the tasks of " +
				"the others are released back to the queue. Waits until the workers have stopped.",
			run: func(w *World) any { return w.drain },
		},
	}
}

// workerGroup is a pool or a process the scenario started.
type workerGroup struct {
	name  string
	queue string
	// A pool: cancel drains it, done closes when it has stopped.
	cancel context.CancelFunc
	// A process.
	cmd    *exec.Cmd
	stderr *tailWriter
	// done closes when the pool or process has stopped; err is why.
	done chan struct{}
	err  error
	// stopping is set when the scenario stops the workers itself.
	stopping bool
}

func (g *workerGroup) kind() string {
	if g.cmd != nil {
		return "worker process"
	}
	return "workers"
}

func (w *World) setLease(_ context.Context, queue string, secs int) error {
	if secs < 1 {
		return fmt.Errorf("a lease of %d seconds: give at least 1", secs)
	}
	if g := w.groupOn(queue); g != nil {
		return fmt.Errorf("%s %q already run on queue %q: set the lease before starting workers", g.kind(), g.name, queue)
	}
	w.leases[queue] = time.Duration(secs) * time.Second
	return nil
}

func (w *World) setClaimWindow(_ context.Context, queue string, secs int) error {
	window := time.Duration(secs) * time.Second
	if secs < 1 {
		return fmt.Errorf("a claim window of %d seconds: give at least 1", secs)
	}
	if g := w.groupOn(queue); g != nil {
		return fmt.Errorf("%s %q already run on queue %q: set the claim window before starting workers", g.kind(), g.name, queue)
	}
	if l := w.lease(queue); window > l/4 {
		return fmt.Errorf("a claim window of %s on queue %q with a lease of %s: the window is at most a quarter of the lease; set a lease of at least %d seconds first", window, queue, l, 4*secs)
	}
	w.windows[queue] = window
	return nil
}

func (w *World) lease(queue string) time.Duration {
	if l, ok := w.leases[queue]; ok {
		return l
	}
	return DefaultLease
}

// groupOn returns a running group on the queue, if any.
func (w *World) groupOn(queue string) *workerGroup {
	for _, g := range w.workers {
		select {
		case <-g.done:
			continue
		default:
		}
		if g.queue == queue {
			return g
		}
	}
	return nil
}

func (w *World) newGroup(name, queue string) (*workerGroup, error) {
	if w.srv == nil {
		return nil, errNoServer
	}
	if _, ok := w.workers[name]; ok {
		return nil, fmt.Errorf("workers named %q were already started in this scenario", name)
	}
	g := &workerGroup{name: name, queue: queue, done: make(chan struct{})}
	return g, nil
}

func (w *World) startPoolCommand(_ context.Context, n int, name, queue, command string) error {
	return w.startPool(n, name, queue, command)
}

func (w *World) startPoolScript(_ context.Context, n int, name, queue string, script *godog.DocString) error {
	return w.startPool(n, name, queue, script.Content)
}

func (w *World) startPool(n int, name, queue, command string) error {
	if strings.TrimSpace(command) == "" {
		return errors.New("the command is empty")
	}
	if n < 1 {
		return fmt.Errorf("start %d workers: give at least 1", n)
	}
	g, err := w.newGroup(name, queue)
	if err != nil {
		return err
	}
	q := taskqueue.New(w.srv.Store(), taskqueue.Config{RetryBackoff: taskqueue.ExponentialBackoff(retryBackoff, 2*time.Second)})
	h := &workers.Exec{Command: command, Dir: w.featureDir, Env: []string{"TRELLIS_SCENARIO_DIR=" + w.dir}, KillDelay: workerGrace}
	pool, err := workers.New(q, h, workers.Config{
		Queue: queue, Worker: name, Concurrency: n, Lease: w.lease(queue), Grace: workerGrace,
		FetchWait: 500 * time.Millisecond, Logger: w.cfg.Logger, ClaimWindow: w.windows[queue],
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	go func() {
		defer close(g.done)
		if err := pool.Run(ctx); err != nil {
			g.err = err
		}
	}()
	w.workers[name] = g
	return nil
}

func (w *World) startProcessCommand(_ context.Context, name, queue, command string) error {
	return w.startProcess(name, queue, command)
}

func (w *World) startProcessScript(_ context.Context, name, queue string, script *godog.DocString) error {
	return w.startProcess(name, queue, script.Content)
}

// binary finds the trellis executable for worker processes.
func (w *World) binary() (string, error) {
	if w.cfg.Binary != "" {
		return w.cfg.Binary, nil
	}
	p, err := exec.LookPath("trellis")
	if err != nil {
		return "", errors.New("worker processes need the trellis binary: put trellis on PATH or set steps.Config.Binary")
	}
	return p, nil
}

func (w *World) startProcess(name, queue, command string) error {
	if strings.TrimSpace(command) == "" {
		return errors.New("the command is empty")
	}
	g, err := w.newGroup(name, queue)
	if err != nil {
		return err
	}
	bin, err := w.binary()
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "worker",
		"--nats-url", w.natsURL,
		"--data", filepath.Join(w.dir, "worker-"+strconv.Itoa(len(w.workers))),
		"--queue", queue,
		"--worker-id", name,
		"--exec", command,
		"--lease", w.lease(queue).String(),
		"--grace", workerGrace.String(),
		"--backoff", retryBackoff.String(),
		"--metrics-addr", "")
	cmd.Dir = w.featureDir
	cmd.Env = append(os.Environ(), "TRELLIS_SCENARIO_DIR="+w.dir)
	g.stderr = &tailWriter{max: 4096}
	cmd.Stderr = g.stderr
	// Its own process group: a Ctrl-C of the run reaches the run, which
	// stops the process itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start worker process %q: %w", name, err)
	}
	g.cmd = cmd
	go func() {
		defer close(g.done)
		g.err = cmd.Wait()
	}()
	w.workers[name] = g
	return nil
}

func (w *World) group(name string) (*workerGroup, error) {
	g, ok := w.workers[name]
	if !ok {
		names := make([]string, 0, len(w.workers))
		for n := range w.workers {
			names = append(names, strconv.Quote(n))
		}
		sort.Strings(names)
		return nil, fmt.Errorf("no workers named %q were started in this scenario (started: %s)", name, strings.Join(names, ", "))
	}
	return g, nil
}

func (w *World) kill9(_ context.Context, name string) error {
	g, err := w.group(name)
	if err != nil {
		return err
	}
	if g.cmd == nil {
		return fmt.Errorf("workers %q are an in-process pool: kill -9 needs a worker process (I start worker process %q on queue ...)", name, name)
	}
	select {
	case <-g.done:
		return fmt.Errorf("worker process %q is not running: %v%s", name, g.err, g.stderr.tail())
	default:
	}
	g.stopping = true
	killTree(g.cmd.Process.Pid)
	select {
	case <-g.done:
		return nil
	case <-time.After(drainWait):
		return fmt.Errorf("worker process %q did not die within %s of SIGKILL", name, drainWait)
	}
}

// killTree kills a process and the process groups of its children (the
// commands a worker runs each lead their own group) with SIGKILL.
func killTree(pid int) {
	children := childPIDs(pid)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for _, c := range children {
		_ = syscall.Kill(-c, syscall.SIGKILL)
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
}

// childPIDs lists the children of a process from /proc (empty where there
// is no /proc).
func childPIDs(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

func (w *World) drain(_ context.Context, name string) error {
	g, err := w.group(name)
	if err != nil {
		return err
	}
	g.stopping = true
	if g.cmd != nil {
		select {
		case <-g.done:
			return fmt.Errorf("worker process %q is not running: %v%s", name, g.err, g.stderr.tail())
		default:
		}
		if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			return fmt.Errorf("drain worker process %q: %w", name, err)
		}
	} else {
		g.cancel()
	}
	select {
	case <-g.done:
	case <-time.After(drainWait):
		return fmt.Errorf("%s %q did not stop within %s of the drain", g.kind(), name, drainWait)
	}
	if g.cmd != nil && g.err != nil {
		return fmt.Errorf("worker process %q exited with %v after the drain%s", name, g.err, g.stderr.tail())
	}
	return g.err
}

// stopWorkers stops every pool (drain) and kills every process.
func (w *World) stopWorkers() {
	var wg sync.WaitGroup
	for _, g := range w.workers {
		g.stopping = true
		if g.cmd != nil {
			killTree(g.cmd.Process.Pid)
		} else {
			g.cancel()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-g.done:
			case <-time.After(drainWait):
				w.cfg.Logger.Warn("features: workers did not stop", "name", g.name)
			}
		}()
	}
	wg.Wait()
	w.workers = map[string]*workerGroup{}
}

// workerTrouble describes workers that stopped on their own, for the
// error of a step that waited on them.
func (w *World) workerTrouble() string {
	var b strings.Builder
	for _, g := range w.workers {
		select {
		case <-g.done:
		default:
			continue
		}
		if g.stopping {
			continue
		}
		fmt.Fprintf(&b, "\n  %s %q stopped on its own: %v", g.kind(), g.name, g.err)
		if g.stderr != nil {
			b.WriteString(g.stderr.tail())
		}
	}
	return b.String()
}

// tailWriter keeps the last max bytes written to it; safe for concurrent
// use.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// tail returns the kept output as an indented block ("" when empty).
func (t *tailWriter) tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(strings.ToValidUTF8(string(t.buf), "?"))
	if s == "" {
		return ""
	}
	return "\n    stderr: " + strings.ReplaceAll(s, "\n", "\n    ")
}
