// Package chaos is Trellis's fault-injection harness: it builds a real
// cluster on one machine — three (or five) nats-server processes, each in
// its own network namespace joined by veth pairs to a bridge, R3 (or R5)
// streams, two `trellis serve` processes attached to different nodes,
// worker pools of `trellis worker --exec` that append a line per execution
// to a ledger of their own, and producers that record every acknowledged add — then
// breaks it (kill -9, SIGSTOP pauses, an isolated node, majority/minority
// and bridge partitions, packet delay and loss, power loss, .blk
// corruption) and checks the outcome from the Trellis log and the ledger
// alone.
//
// It lives in the repository, in its own package, because the claim it
// checks ("no acknowledged task lost, none finished twice, and the log
// proves it") is part of the product: anyone can re-run it with
// `make chaos` on their own machine, and `go test ./chaos` runs a short
// fixed slice of it with the rest of the suite. It needs root (network
// namespaces; iptables for packet delay and loss, skipped without it);
// without root the cluster tests skip.
//
// It decides nothing of the log and appends no events of its own: the
// events it reads are the ones the Trellis processes under test append.
package chaos
