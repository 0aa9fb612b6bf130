// Package taskqueue is the queue domain: it decides every change to a
// queue task and to a queue's controls, and appends the events that
// record them through package command (checked appends on the task's
// aggregate, chained).
//
// What it decides: adds (single and bulk, with priorities, delays, unique
// keys, dependencies and per-task budgets), claims (eager claims by queue
// next and held claims of worker pools, see Hold), heartbeats and lease
// expiry, completions, failed attempts with retries and dead letters,
// releases, explicit retries and cancellations, and the queue controls
// (pause, resume, global limit, lease, rate, per-key limit) enforced at
// claim time by the gate aggregates (gate.go). The Reactor takes up
// events that ask for more events (dependants made ready, schedule ticks
// that add tasks).
//
// Which events it appends, on TRELLIS_QUEUE:
//   - trellis.queue.<queue>.<task_id>.<type> for a task: added, claimed,
//     completed, failed, attempt_failed, dead, lease_extended,
//     lease_expired, released,
//     requeued, due, prerequisite_done, ready, linked, cancel_requested,
//     cancelled (routed through priority and dependency suffixes, see
//     TaskSubject);
//   - trellis.queue.<queue>._control.<type>: paused, resumed, limit_set,
//     lease_set, rate_set, per_key_set, agent_lease_set;
//   - trellis.queue.<queue>._gate and ._key.<hash>: the flow-control
//     gates' admissions; ._unique.<hash>: unique keys' holds;
//   - trellis.queue.<queue>._schedule.<name>.<type>: recurring schedules
//     (schedule.go) and their ticks;
//   - the timers of delayed tasks (JetStream message schedules that
//     publish a task's due event).
//
// The root package's trellis.QueueService, QueueAdmin and ScheduleService
// interfaces are what the transports see of it.
package taskqueue
