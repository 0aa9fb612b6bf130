// Package command is Trellis's one decide-append mechanism: a command
// loads its aggregate by folding the aggregate's events, decides against
// that state, and appends the event it decided with the aggregate's
// expected last sequence (rule 2 of the design). Every domain (queue
// tasks, queue controls, VINE graphs, agent tasks, memory scopes, code
// files) runs its commands through a Runner, so they share one retry
// policy, one cache and one rule for stale state:
//
//   - A stale append (another writer got there first) catches the state up
//     with the events it missed and decides again, up to MaxAttempts, with
//     a short jittered backoff that ends when the context does.
//   - A refusal decided from a state that may be behind the log (a cached
//     state, or one built from a dispatch message) is decided again from
//     the log before it is reported: only the log can say a command is
//     wrong.
//
// It appends nothing of its own: the events are the domains' (see each
// domain package), and the runner adds only the chain link and the
// expected last sequence that make every append checked.
package command
