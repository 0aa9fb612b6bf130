package steps

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/cucumber/godog"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/server"
	"github.com/trellis/trellis/workflow"
)

// Defaults of Config.
const (
	// DefaultLease is the lease of worker pools and processes on a queue
	// whose lease a scenario did not set.
	DefaultLease = 5 * time.Second
	// DefaultCallTimeout bounds each call a step makes to Trellis.
	DefaultCallTimeout = 30 * time.Second
	// DefaultAgentTimeout bounds "N agents run ..." on a graph.
	DefaultAgentTimeout = 2 * time.Minute
)

// Config configures the steps of a suite. Zero values take the documented
// defaults.
type Config struct {
	// NATSURL runs each scenario's Trellis on this NATS server instead of
	// an embedded one. The server must hold no Trellis data: a scenario
	// refuses to start when one of Trellis's streams holds data or a Trellis
	// server answers on it, and deletes those streams when it ends.
	NATSURL string
	// Binary is the trellis executable the worker-process steps start
	// (default: "trellis" from PATH).
	Binary string
	// TempDir is where each scenario's scratch directory is made (default
	// os.TempDir()); the directory is removed when the scenario ends.
	TempDir string
	// CallTimeout bounds each call to Trellis (default DefaultCallTimeout).
	CallTimeout time.Duration
	// AgentTimeout bounds a run of VINE agents (default DefaultAgentTimeout).
	AgentTimeout time.Duration
	// Logger receives the scenario servers' and workers' logs (default:
	// discarded).
	Logger *slog.Logger
	// Workflows, when set, registers the suite's workflows
	// (workflow.Register) on the engine of the pool that "a workflow pool
	// hosts the suite's workflows" starts.
	Workflows func(e *workflow.Engine) error
	// OnUndefined, when set, is called for each step of a scenario that no
	// step definition matches, with the closest steps of the vocabulary.
	OnUndefined func(step string, closest []Definition)
}

func (c Config) withDefaults() Config {
	if c.CallTimeout <= 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.AgentTimeout <= 0 {
		c.AgentTimeout = DefaultAgentTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// World is one scenario's state: the Trellis the scenario runs against,
// the task the steps last touched, the workers it started. Register
// returns it so a suite's own steps can use the same Trellis.
type World struct {
	cfg        Config
	featureDir string
	dir        string
	ws         string

	srv    *server.Server
	queue  trellis.QueueService
	admin  trellis.QueueAdmin
	vine   trellis.VineService
	memory trellis.MemoryService
	// natsURL is where worker processes connect.
	natsURL string
	// external is set when the scenario runs on Config.NATSURL.
	external bool

	task     *trellis.Task
	named    map[string]*trellis.Task
	held     map[string]*trellis.Task
	leases   map[string]time.Duration
	windows  map[string]time.Duration // claim windows of pools started on a queue (0: the default)
	workers  map[string]*workerGroup
	closeMu  sync.Mutex
	closers  []func()
	undefSet map[string]bool
	wf       workflowState
	retain   retentionState
}

// Register adds the Trellis vocabulary to a scenario and returns the
// scenario's world. Call it from a godog ScenarioInitializer (once per
// scenario). Everything a scenario starts is stopped and removed when the
// scenario ends.
func Register(sc *godog.ScenarioContext, cfg Config) *World {
	w := &World{
		cfg:      cfg.withDefaults(),
		named:    map[string]*trellis.Task{},
		held:     map[string]*trellis.Task{},
		leases:   map[string]time.Duration{},
		windows:  map[string]time.Duration{},
		workers:  map[string]*workerGroup{},
		undefSet: map[string]bool{},
	}
	for _, d := range Vocabulary() {
		sc.Step(d.re, d.run(w))
	}
	sc.Before(func(ctx context.Context, s *godog.Scenario) (context.Context, error) {
		w.featureDir = featureDir(s.Uri)
		return ctx, nil
	})
	sc.After(func(ctx context.Context, _ *godog.Scenario, _ error) (context.Context, error) {
		w.Close()
		return ctx, nil
	})
	sc.StepContext().After(func(ctx context.Context, st *godog.Step, status godog.StepResultStatus, err error) (context.Context, error) {
		if status != godog.StepUndefined || w.undefSet[st.Text] {
			return ctx, nil
		}
		w.undefSet[st.Text] = true
		closest := Suggest(st.Text, 3)
		if w.cfg.OnUndefined != nil {
			w.cfg.OnUndefined(st.Text, closest)
		}
		lines := make([]string, len(closest))
		for i, d := range closest {
			lines[i] = d.exampleText()
		}
		return ctx, fmt.Errorf("undefined step %q; the closest defined steps are:\n    %s", st.Text, strings.Join(lines, "\n    "))
	})
	return w
}

var lineSuffixRE = regexp.MustCompile(`:\d+$`)

// featureDir is the absolute directory of a scenario's feature file (its
// uri may end in ":LINE").
func featureDir(uri string) string {
	dir, err := filepath.Abs(filepath.Dir(lineSuffixRE.ReplaceAllString(uri, "")))
	if err != nil {
		return "."
	}
	return dir
}

// Server returns the scenario's Trellis server; nil before "Given a
// Trellis server".
func (w *World) Server() *server.Server { return w.srv }

// Queue returns the task queue; nil before "Given a Trellis server".
func (w *World) Queue() trellis.QueueService { return w.queue }

// Admin returns the queue's operator side; nil before "Given a Trellis
// server".
func (w *World) Admin() trellis.QueueAdmin { return w.admin }

// Vine returns the VINE service; nil before "Given a Trellis server".
func (w *World) Vine() trellis.VineService { return w.vine }

// Memory returns the agent memory service; nil before "Given a Trellis
// server".
func (w *World) Memory() trellis.MemoryService { return w.memory }

// Dir returns the scenario's scratch directory (removed when it ends).
func (w *World) Dir() string { return w.dir }

// Workspace returns the workspace root the scenario's VINE graphs live in.
func (w *World) Workspace() string { return w.ws }

// FeatureDir returns the directory of the scenario's feature file:
// commands run there and file paths in steps are relative to it.
func (w *World) FeatureDir() string { return w.featureDir }

// Task returns "that task": the task the steps last added, claimed or
// finished; nil when there is none.
func (w *World) Task() *trellis.Task { return w.task }

// SetTask makes t "that task" for the following steps.
func (w *World) SetTask(t *trellis.Task) { w.task = t }

// OnClose registers fn to run when the scenario ends, before the server
// stops (last registered, first run).
func (w *World) OnClose(fn func()) {
	w.closeMu.Lock()
	defer w.closeMu.Unlock()
	w.closers = append(w.closers, fn)
}

// Close stops everything the scenario started: workers, agents, the
// server, and (on an external NATS) the streams the scenario created; then
// it removes the scratch directory. The scenario's After hook calls it.
func (w *World) Close() {
	w.stopWorkers()
	w.closeMu.Lock()
	closers := w.closers
	w.closers = nil
	w.closeMu.Unlock()
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
	if w.srv != nil {
		w.srv.Close()
		w.srv = nil
	}
	if w.external {
		ctx, cancel := context.WithTimeout(context.Background(), w.cfg.CallTimeout)
		if err := deleteStreams(ctx, w.cfg.NATSURL); err != nil {
			w.cfg.Logger.Warn("features: could not delete the scenario's streams", "nats", w.cfg.NATSURL, "err", err)
		}
		cancel()
		w.external = false
	}
	if w.dir != "" {
		_ = os.RemoveAll(w.dir)
		w.dir = ""
	}
}

// errNoServer is returned by every step that needs Trellis before "Given
// a Trellis server".
var errNoServer = errors.New(`no Trellis in this scenario yet: start it with "Given a Trellis server"`)

// call returns a context bounded by the call timeout, and errNoServer when
// the scenario has no server.
func (w *World) call(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if w.srv == nil {
		return ctx, func() {}, errNoServer
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.CallTimeout)
	return ctx, cancel, nil
}

// localPath resolves a path a step names: relative to the feature file.
func (w *World) localPath(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(w.featureDir, p)
}
