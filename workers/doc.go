// Package workers runs worker pools: a Pool bound to one queue claims tasks
// through the queue's durable JetStream consumer with a lease (AckWait),
// heartbeats while its Handler runs (InProgress), finishes each task with a
// checkpoint, retries failed attempts with exponential backoff and jitter
// until the task's max attempts (then the task is dead), and on shutdown
// drains: it stops claiming, lets running handlers finish within a grace
// period and releases the rest back to the queue. Pools on many machines
// share one queue; the queue's pause and global concurrency limit apply to
// all of them.
//
// Exec is the built-in Handler that runs a command per task
// (`trellis worker --exec`).
//
// A pool decides when to claim, heartbeat, retry and drain; it appends no
// events itself: the claims, heartbeats and outcomes it reports are appended
// by the queue domain (package taskqueue).
package workers
