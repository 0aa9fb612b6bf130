package workers

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are a pool's Prometheus metrics, labelled by queue.
type Metrics struct {
	Claimed         *prometheus.CounterVec
	Done            *prometheus.CounterVec
	Failed          *prometheus.CounterVec
	Dead            *prometheus.CounterVec
	Retries         *prometheus.CounterVec
	Released        *prometheus.CounterVec
	LeaseLost       *prometheus.CounterVec
	Cancelled       *prometheus.CounterVec
	InFlight        *prometheus.GaugeVec
	ClaimLatency    *prometheus.HistogramVec
	HandlerDuration *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them on reg (when not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "trellis", Subsystem: "worker", Name: name, Help: help}, []string{"queue"})
	}
	m := &Metrics{
		Claimed:   counter("claimed_total", "Tasks claimed by this worker."),
		Done:      counter("done_total", "Tasks this worker finished."),
		Failed:    counter("failed_total", "Tasks this worker ended as failed (budget exhausted or not retried)."),
		Dead:      counter("dead_total", "Tasks that became dead on this worker's last failed attempt."),
		Retries:   counter("retries_total", "Failed attempts this worker queued for another attempt."),
		Released:  counter("released_total", "Tasks released back to the queue on drain."),
		LeaseLost: counter("lease_lost_total", "Tasks whose lease expired while this worker held them (its finish was refused)."),
		Cancelled: counter("cancelled_total", "Tasks this worker stopped because they were cancelled."),
		InFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "trellis", Subsystem: "worker", Name: "in_flight",
			Help: "Tasks this worker is running now."}, []string{"queue"}),
		ClaimLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "trellis", Subsystem: "worker", Name: "claim_latency_seconds",
			Help: "From receiving a dispatch to the claim being recorded.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}, []string{"queue"}),
		HandlerDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "trellis", Subsystem: "worker", Name: "handler_duration_seconds",
			Help: "How long handlers ran.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 20)}, []string{"queue"}),
	}
	if reg != nil {
		reg.MustRegister(m.Claimed, m.Done, m.Failed, m.Dead, m.Retries, m.Released, m.LeaseLost, m.Cancelled, m.InFlight, m.ClaimLatency, m.HandlerDuration)
	}
	return m
}
