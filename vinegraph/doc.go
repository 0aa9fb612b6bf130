// Package vinegraph is the VINE graph domain: it runs .vine task graphs
// as event-sourced aggregates, one per graph (trellis.vine.<graph_id>),
// deciding every change through package command (checked appends on the
// graph's aggregate) and rewriting the .vine file from the log after each
// (a claim returns once its event is recorded; one writer per graph
// writes the file behind it, see writer.go).
//
// What it decides: which file a request names and whether it lies inside a
// workspace root (Handler.Inside; references a graph expands too), the
// import of a file into the log, whether the file on disk was edited by
// hand since Trellis wrote it (merged into the log, or recorded with its
// conflicts), atomic batches of operations (vine_write), claims of a
// ready node by an agent (vine_claim), and the expansion of a reference
// node by its child graph (vine_expand). Reads (vine_next, vine_read, the
// dashboard's graph views) come from the log through the frontier
// projection once it has applied the graph's latest event.
//
// Which events it appends, on TRELLIS_VINE, as trellis.vine.<graph_id>.<type>:
// imported and hand_edited (a snapshot of the graph's canonical text),
// batch_applied (one atomic batch, claims included) and expanded.
//
// The root package's trellis.VineService interface is what the transports
// see of it (Service implements it); handlers.Service composes it with
// the other domains.
package vinegraph
