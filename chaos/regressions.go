package chaos

import "time"

// Regression is a scenario that once broke a promise, kept so that
// `make chaos FAULTS=regressions` runs it again as it was run then (the
// fault, its heal time, the run number, the runs).
type Regression struct {
	Name     string // the defect, in a few words
	Fault    string // a fault of Faults()
	Heal     time.Duration
	Duration time.Duration
	Number   uint64
	Runs     int
	// Test is the deterministic test that reproduces the defect in its
	// package (the chaos run depends on timing, and may pass by luck).
	Test string
}

// Regressions lists the chaos scenarios that found defects.
func Regressions() []Regression {
	return []Regression{
		{
			// Each serve left the API while its node was down (quorum
			// watch) and joined it again after the restart; the drained
			// subscriptions came back as dead queue-group members that
			// swallowed about half the API requests. With an 8 s outage
			// the reconnect falls within the drain's 10 s flush.
			Name: "API requests unanswered after a whole-cluster outage", Fault: "power-loss-all",
			Heal: 8 * time.Second, Duration: 14 * time.Second, Number: 41, Runs: 1,
			Test: "TestStopWhileReconnectingLeavesNoGhost (handlers/natsapi), TestAPIAnswersAfterWholeClusterOutage (server)",
		},
		{
			// A pool's claim append reported failed while the stream
			// leader changed had been stored; the claim found its own
			// claim, took it for another's and acknowledged the dispatch.
			Name: "added tasks never dispatched after an isolated leader", Fault: "isolate-leader",
			Heal: 12 * time.Second, Duration: 20 * time.Second, Number: 7, Runs: 4,
			Test: "TestClaimFindsItsOwnLateStoredClaim (taskqueue)",
		},
		{
			// A serve and a pool attached to a node cut off from the
			// quorum stayed on it until the heal (nothing in nats.go
			// leaves a node that answers pings, and the node stops
			// announcing the others); the run's client lines show it.
			Name: "serve and pool stuck on a node cut off from the quorum", Fault: "partition-clients",
			Heal: 12 * time.Second, Duration: 20 * time.Second, Number: 31, Runs: 1,
			Test: "TestServeAndPoolsMoveOffACutOffNode (server), TestWatchMovesOffACutOffNode (failover)",
		},
	}
}
