// Package bench measures Trellis against raw JetStream in the same run, on
// the same server: the checked-append rate, the work-queue round trip
// (publish → fetch 1 → ack), and Trellis's full task lifecycle
// (add → next → done), plus claim latency at a fixed offered rate. It backs
// `trellis bench` and the Go benchmarks, so figures are reported as ratios
// (absolute numbers on a shared machine are noisy).
//
// It decides nothing and appends no events itself: the load it drives
// appends through the queue like any caller.
package bench
