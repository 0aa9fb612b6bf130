// Package workflow is the durable workflow domain: workflows are Go
// functions whose steps, sleeps, signal waits, awaited queue tasks and
// child runs are journaled as events, so a run that loses its process is
// replayed by another pool and continues where it stopped (recorded steps
// return their recorded results without running again).
//
// What it decides (Engine, behind the Service interface the transports
// see): whether a run may start (a registered workflow and version, input
// within MaxInputBytes), which journal position a step, timer, signal or
// awaited task takes when a run is advanced, whether a signal, a cancel
// or a retry applies to the run as it stands, and which pool's queue an
// activation is dispatched on. Every decision is a checked append through
// package command on the run's aggregate, so two pools advancing one run
// cannot both record a step.
//
// Which events it appends, on TRELLIS_WORKFLOWS: per run, as
// trellis.workflows.run.<run_id>.<type>, started, step_completed,
// step_failed, timer_set, timer_fired, signal_waiting, signal_received,
// signal_consumed, task_awaited, task_ended, child_started, child_ended,
// cancel_requested, completed, failed, cancelled, retried and woken (and
// pruned, the tombstone `trellis prune` appends before it removes a
// finished run: see retention/); per
// definition, trellis.workflows.def.<name>.registered. Activations are
// queue tasks, added through package taskqueue. docs/workflows.md is the
// guide; workflowtest replays recorded runs against changed code.
package workflow
