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
// or cancelled) and cuts open ones at a snapshot: gates, open tasks
// (heartbeating ones included), schedules, queue controls and unique
// keys (see gates.go, opentasks.go and the files beside them). The events
// a snapshot replaces are archived and the record names the snapshot,
// which continues the aggregate's chain in the live log. Finished
// workflow runs are removed whole from the workflow stream (runs.go),
// completed agent tasks per name, leaving a tombstone (agenttasks.go);
// VINE graphs are kept whole (docs/retention.md).
//
// It decides which events may leave the log and appends the prune
// records (`pruned`, naming every removed sequence and the snapshot each
// cut aggregate continues from), the open tasks' snapshots and the
// finished runs' and agent task names' tombstones (`pruned` on
// TRELLIS_WORKFLOWS and TRELLIS_TASKS).
package retention
