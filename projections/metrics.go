package projections

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// QueueMetrics is the server's Prometheus view of the queue, derived from
// the log: every claim, finish, retry, dead letter and lease expiry any
// worker anywhere records is counted, and the latency histograms come from
// event times. It counts events appended after the server started (a
// Prometheus counter starts at zero with its process), so it is not part
// of replay. The in-flight gauge and task counts are read from the board.
type QueueMetrics struct {
	start uint64
	board *Board

	events          *prometheus.CounterVec
	claimLatency    *prometheus.HistogramVec
	handlerDuration *prometheus.HistogramVec

	mu         sync.Mutex
	dispatched map[string]time.Time // task -> last time it became claimable
	claimed    map[string]time.Time // task -> time of its current claim
}

// metricNames maps event types onto the counters users ask for.
var metricNames = map[string]string{
	taskqueue.Claimed:       "claimed",
	taskqueue.Completed:     "done",
	taskqueue.Failed:        "failed",
	taskqueue.Dead:          "dead",
	taskqueue.AttemptFailed: "retries",
	taskqueue.LeaseExpired:  "lease_expiries",
	taskqueue.Released:      "released",
	taskqueue.Added:         "added",
	taskqueue.Requeued:      "requeued",
	taskqueue.Cancelled:     "cancelled",
	taskqueue.Due:           "due",
	taskqueue.Ready:         "ready",
}

// NewQueueMetrics returns the metrics projection; it counts events after
// sequence start and registers its collectors on reg.
func NewQueueMetrics(board *Board, start uint64, reg prometheus.Registerer) *QueueMetrics {
	m := &QueueMetrics{
		start: start,
		board: board,
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "trellis", Subsystem: "queue", Name: "events_total",
			Help: "Queue events recorded since this server started, by queue and kind: added, claimed, done, failed, dead, retries, lease_expiries, released, requeued."},
			[]string{"queue", "kind"}),
		claimLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "trellis", Subsystem: "queue", Name: "claim_latency_seconds",
			Help: "From a task becoming claimable (added, retry due, released) to its claim.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 20)}, []string{"queue"}),
		handlerDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "trellis", Subsystem: "queue", Name: "handler_duration_seconds",
			Help: "From a claim to the attempt's end (done, failed, retried, dead).", Buckets: prometheus.ExponentialBuckets(0.001, 2, 22)}, []string{"queue"}),
		dispatched: map[string]time.Time{},
		claimed:    map[string]time.Time{},
	}
	if reg != nil {
		reg.MustRegister(m.events, m.claimLatency, m.handlerDuration, newBoardCollector(board))
	}
	return m
}

// Name implements Projection.
func (m *QueueMetrics) Name() string { return "metrics" }

// Stream implements Projection.
func (m *QueueMetrics) Stream() string { return events.StreamQueue }

// Load implements Projection: counting starts at the server's start.
func (m *QueueMetrics) Load() (uint64, error) { return m.start, nil }

// Save implements Projection (nothing is persisted).
func (m *QueueMetrics) Save(uint64) error { return nil }

// Reset implements Projection (counters are never reset).
func (m *QueueMetrics) Reset() error { return nil }

// Apply implements Projection.
func (m *QueueMetrics) Apply(rec events.Recorded) error {
	if !taskqueue.IsTaskSubject(rec.Subject) {
		return nil
	}
	queue := queueOf(rec.Subject)
	if kind, ok := metricNames[rec.Type]; ok {
		m.events.WithLabelValues(queue, kind).Inc()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	id := rec.AggregateID
	switch rec.Type {
	case taskqueue.Claimed:
		if at, ok := m.dispatched[id]; ok {
			m.claimLatency.WithLabelValues(queue).Observe(rec.Time.Sub(at).Seconds())
			delete(m.dispatched, id)
		}
		m.claimed[id] = rec.Time
	case taskqueue.Completed, taskqueue.Failed, taskqueue.Dead, taskqueue.AttemptFailed:
		if at, ok := m.claimed[id]; ok {
			m.handlerDuration.WithLabelValues(queue).Observe(rec.Time.Sub(at).Seconds())
			delete(m.claimed, id)
		}
	case taskqueue.LeaseExpired, taskqueue.Released, taskqueue.Cancelled:
		delete(m.claimed, id)
		if rec.Type == taskqueue.Cancelled {
			delete(m.dispatched, id)
		}
	}
	if rec.Type == taskqueue.Added {
		var p taskqueue.AddedPayload
		if rec.DecodePayload(&p) == nil && (p.RunAt != nil || len(p.WaitingFor) > 0) {
			return nil // claimable only once due or ready
		}
	}
	if taskqueue.IsDispatch(rec.Type) {
		at := rec.Time
		if rec.Type == taskqueue.AttemptFailed {
			var p taskqueue.AttemptFailedPayload
			if rec.DecodePayload(&p) == nil && p.RetryAt != nil {
				at = *p.RetryAt // claimable from then on
			}
		}
		m.dispatched[id] = at
	}
	if rec.Type == taskqueue.LeaseExpired {
		m.dispatched[id] = rec.Time
	}
	return nil
}

// queueOf extracts the queue token of trellis.queue.<queue>.<id>.<type>.
func queueOf(subject string) string {
	parts := strings.SplitN(subject, ".", 4)
	if len(parts) < 3 {
		return ""
	}
	return parts[2]
}

// boardCollector exports the board's task counts at scrape time:
// trellis_queue_tasks{queue,status} and trellis_queue_in_flight{queue}.
type boardCollector struct {
	board    *Board
	tasks    *prometheus.Desc
	inFlight *prometheus.Desc
}

func newBoardCollector(board *Board) *boardCollector {
	return &boardCollector{
		board:    board,
		tasks:    prometheus.NewDesc("trellis_queue_tasks", "Tasks on the queue board by queue and status.", []string{"queue", "status"}, nil),
		inFlight: prometheus.NewDesc("trellis_queue_in_flight", "Tasks claimed and not yet finished, by queue.", []string{"queue"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *boardCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.tasks
	ch <- c.inFlight
}

// Collect implements prometheus.Collector.
func (c *boardCollector) Collect(ch chan<- prometheus.Metric) {
	for queue, counts := range c.board.Counts() {
		for _, s := range trellis.Statuses() {
			ch <- prometheus.MustNewConstMetric(c.tasks, prometheus.GaugeValue, float64(counts[s]), queue, string(s))
		}
		ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(counts[trellis.StatusClaimed]), queue)
	}
}
