// Package failover moves a NATS connection off a node that is cut off
// from the cluster's JetStream quorum (a partition, the node on the
// minority side) while the connection itself stays up: nothing in
// nats.go leaves a server that still answers pings, so a Trellis process
// attached to such a node would otherwise wait for the heal.
//
// A Mover is told each probe of the connection (JetStream, or the
// Trellis API, answering or not). After a run of failures while the
// connection is up, it asks the other servers it knows — the configured
// ones and every one the cluster announced, remembered even after the
// cut-off node stops announcing them — each on a short-lived connection
// of its own, and moves the connection (nats.go ForceReconnect) to the
// first where the probe answers. It moves only after a server answered,
// so a whole-cluster outage (no node with a quorum) moves nothing
// (should the reconnect to the server that answered fail, nats.go goes
// on to the other servers of the pool, as any reconnect does; the
// Mover then judges the one it lands on like any other); and each search waits longer than the last (doubling to
// MaxGap, reset once the connection has answered for a while), so a
// flapping cluster cannot make it ping-pong.
//
// It decides which NATS server a Trellis process talks to, and appends no
// events: it only asks JetStream (or the Trellis API) whether it answers.
package failover
