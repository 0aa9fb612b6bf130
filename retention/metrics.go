package retention

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// loopMetrics are a Loop's Prometheus metrics (all no-ops without a
// registerer).
type loopMetrics struct {
	prunes   *prometheus.CounterVec
	tasks    prometheus.Counter
	events   prometheus.Counter
	bytes    prometheus.Counter
	failing  prometheus.Gauge
	lastOK   prometheus.Gauge
	disabled bool
}

func newLoopMetrics(reg prometheus.Registerer) (*loopMetrics, error) {
	if reg == nil {
		return &loopMetrics{disabled: true}, nil
	}
	m := &loopMetrics{
		prunes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "trellis", Subsystem: "retention", Name: "prunes_total",
			Help: "Prunes run by this server's retention loop, by result: ok, conflict (another server's prune ran at the same time), error."}, []string{"result"}),
		tasks: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "trellis", Subsystem: "retention", Name: "pruned_tasks_total",
			Help: "Finished queue tasks this server's retention loop removed from the log (after archiving them)."}),
		events: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "trellis", Subsystem: "retention", Name: "pruned_events_total",
			Help: "Events this server's retention loop removed from the log (after archiving them)."}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "trellis", Subsystem: "retention", Name: "archived_bytes_total",
			Help: "Bytes of archive files this server's retention loop wrote."}),
		failing: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "trellis", Subsystem: "retention", Name: "failing",
			Help: "1 while the last prune of this server's retention loop failed (the log is not being pruned: see the server's log), else 0."}),
		lastOK: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "trellis", Subsystem: "retention", Name: "last_success_timestamp_seconds",
			Help: "Unix time of the last prune of this server's retention loop that succeeded (0: none yet)."}),
	}
	for _, r := range []string{"ok", "conflict", "error"} {
		m.prunes.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{m.prunes, m.tasks, m.events, m.bytes, m.failing, m.lastOK} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *loopMetrics) add(res *Result) {
	if m.disabled {
		return
	}
	m.tasks.Add(float64(res.Tasks))
	m.events.Add(float64(res.Events))
	for _, a := range res.Archives {
		m.bytes.Add(float64(a.Bytes))
	}
}

func (m *loopMetrics) ok() {
	if m.disabled {
		return
	}
	m.prunes.WithLabelValues("ok").Inc()
	m.failing.Set(0)
	m.lastOK.Set(float64(time.Now().Unix()))
}

func (m *loopMetrics) conflict() {
	if m.disabled {
		return
	}
	m.prunes.WithLabelValues("conflict").Inc()
	m.failing.Set(0)
}

func (m *loopMetrics) failed() {
	if m.disabled {
		return
	}
	m.prunes.WithLabelValues("error").Inc()
	m.failing.Set(1)
}
