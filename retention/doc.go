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
// This first slice prunes finished aggregates only (queue tasks that are
// done, failed, dead or cancelled). Open aggregates (queued, claimed,
// waiting or scheduled tasks, gates, schedules, VINE graphs, agent tasks,
// workflow runs) are kept whole; snapshots that continue their chains are
// the next step (docs/retention.md).
package retention
