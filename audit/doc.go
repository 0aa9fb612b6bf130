// Package audit is the audit domain: it answers who did what across
// aggregates (queries over a queue, a graph or a whole stream, a page at
// a time), rebuilds the queue board as of any moment, and decides whether
// the event log was tampered with.
//
// What it decides: whether every stream still holds what Trellis wrote
// (verify.go walks each stream's window and its deleted sequences,
// chain.go checks every aggregate's hash chain, links.go each event's
// message id, ULID and times and the timers that fired), whether an
// audit export still holds what was exported (export.go writes and
// checks it offline, with the same window walker, walk.go), and whether
// the log still holds the heads recorded earlier: the server's keyed
// anchors and an auditor's witness (anchor.go).
//
// Which events it appends: none. It reads every domain stream
// (TRELLIS_QUEUE, TRELLIS_VINE, TRELLIS_CHUNKS, TRELLIS_MEMORY,
// TRELLIS_TASKS, TRELLIS_WORKFLOWS, TRELLIS_AUTH); the only thing it
// writes is outside the log: a running server's anchors in
// <data>/audit/anchors.jsonl, keyed with <data>/audit/anchor.key, and the
// cache of as-of boards in <data>/asof/. docs/audit.md says what verify
// detects and what it cannot.
package audit
