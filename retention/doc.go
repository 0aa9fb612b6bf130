// Package retention bounds the event log: Prune removes the events of
// finished queue tasks stored before a cut, after writing them to an
// archive in the audit export format (chained, fsynced, checked by
// `trellis audit verify --file`), and appends a prune record that
// accounts for every sequence it removes, so `trellis audit verify` on the
// live log stays OK while a removal nobody recorded is still a finding.
// Loop runs Prune periodically (`trellis serve --retention --archive`);
// the prunes of several servers exclude each other through the record's
// check.
//
// It prunes finished aggregates (queue tasks that are done, failed, dead
// or cancelled) and cuts open gates and open tasks at a snapshot (see
// gates.go, opentasks.go): the events the snapshot replaces are archived
// and the record names the snapshot, which continues the aggregate's
// chain in the live log. Other open aggregates (schedules, VINE graphs,
// agent tasks, workflow runs) are kept whole (docs/retention.md).
package retention
