package workflow

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trellis/trellis/events"
)

// Metrics is the server's Prometheus view of workflow runs, derived from
// the log like the queue's (projections.QueueMetrics): it folds
// TRELLIS_WORKFLOWS from the start to know every run in flight, and
// counts the events appended after the server started (a counter starts
// at zero with its process). It implements projections.Projection.
//
//   - trellis_workflow_runs_total{workflow,event}: runs started,
//     completed, failed, cancelled and retried since the server started;
//   - trellis_workflow_runs_in_flight{workflow,status}: runs not over, by
//     status (running, sleeping, waiting);
//   - trellis_workflow_step_duration_seconds{workflow,outcome}: how long
//     each recorded step's attempts ran (outcome completed or failed).
type Metrics struct {
	start uint64
	runs  *prometheus.CounterVec
	steps *prometheus.HistogramVec
	desc  *prometheus.Desc

	mu   sync.Mutex
	live map[string]*Run // runs not over, and failed runs (a retry resumes them)
	seen map[string]bool // workflows with runs, for zero gauges
}

// runEvents maps run event types onto the counter's event label.
var runEvents = map[string]string{
	Started: "started", Completed: "completed", Failed: "failed", Cancelled: "cancelled", Retried: "retried",
}

// NewMetrics returns the workflow metrics projection; it counts events
// after sequence start and registers its collectors on reg.
func NewMetrics(start uint64, reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		start: start,
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "trellis", Subsystem: "workflow", Name: "runs_total",
			Help: "Workflow run events recorded since this server started, by workflow and event: started, completed, failed, cancelled, retried."},
			[]string{"workflow", "event"}),
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "trellis", Subsystem: "workflow", Name: "step_duration_seconds",
			Help: "How long a recorded step's attempts ran (backoff included), by workflow and outcome (completed, failed).", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 24)},
			[]string{"workflow", "outcome"}),
		desc: prometheus.NewDesc("trellis_workflow_runs_in_flight", "Workflow runs not over, by workflow and status (running, sleeping, waiting).", []string{"workflow", "status"}, nil),
		live: map[string]*Run{},
		seen: map[string]bool{},
	}
	if reg != nil {
		reg.MustRegister(m.runs, m.steps, m)
	}
	return m
}

// Name implements projections.Projection.
func (m *Metrics) Name() string { return "workflow-metrics" }

// Stream implements projections.Projection.
func (m *Metrics) Stream() string { return events.StreamWorkflows }

// Load implements projections.Projection: the whole stream is folded (the
// runs in flight), counting starts at the server's start.
func (m *Metrics) Load() (uint64, error) { return 0, nil }

// Save implements projections.Projection (nothing is persisted).
func (m *Metrics) Save(uint64) error { return nil }

// Reset implements projections.Projection.
func (m *Metrics) Reset() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.live, m.seen = map[string]*Run{}, map[string]bool{}
	return nil
}

// Apply implements projections.Projection.
func (m *Metrics) Apply(rec events.Recorded) error {
	id, ok := runIDOf(rec.Subject)
	if !ok {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec.Type == Pruned {
		delete(m.live, id) // a failed run pruned: it will not be retried
		return nil
	}
	r, err := fold(m.live[id], rec)
	if err != nil || r == nil {
		return nil // a bad event: show reports it; the metrics skip it
	}
	m.seen[r.Workflow] = true
	if rec.Seq > m.start {
		if ev, ok := runEvents[rec.Type]; ok {
			m.runs.WithLabelValues(r.Workflow, ev).Inc()
		}
		m.observeStep(r, rec)
	}
	switch r.Status {
	case StatusCompleted, StatusCancelled:
		delete(m.live, id)
	default:
		m.live[id] = r
	}
	return nil
}

// observeStep records the duration of the step an event recorded (a
// step's own event, or the step a run's end event carries).
func (m *Metrics) observeStep(r *Run, rec events.Recorded) {
	var p EntryPayload
	switch rec.Type {
	case StepCompleted, StepFailed:
		if rec.DecodePayload(&p) != nil {
			return
		}
	case Completed, Failed, Cancelled:
		var end EndPayload
		if rec.DecodePayload(&end) != nil || end.Step == nil {
			return
		}
		p = *end.Step
	default:
		return
	}
	outcome := EntryCompleted
	if rec.Type == StepFailed {
		outcome = EntryFailed
	}
	m.steps.WithLabelValues(r.Workflow, outcome).Observe(p.TookMs / 1000)
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.desc }

// Collect implements prometheus.Collector: the runs in flight by status.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	counts := map[string]map[Status]int{}
	for name := range m.seen {
		counts[name] = map[Status]int{}
	}
	for _, r := range m.live {
		if !r.Status.Terminal() {
			counts[r.Workflow][r.Status]++
		}
	}
	m.mu.Unlock()
	for name, c := range counts {
		for _, s := range []Status{StatusRunning, StatusSleeping, StatusWaiting} {
			ch <- prometheus.MustNewConstMetric(m.desc, prometheus.GaugeValue, float64(c[s]), name, string(s))
		}
	}
}
