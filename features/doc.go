// Package features runs Trellis's godog feature files: user workflows in
// plain language, executed against a real Trellis server (embedded NATS
// JetStream, NATS API, projections) from `go test`, in strict mode. The
// steps are the public vocabulary of package steps (what `trellis features
// run` offers users) plus the steps in its tests, which look at Trellis's
// own internals (checkpoint files, the orchestrator, code memory).
// examples/ holds the user-style features `trellis features run` passes;
// cmd/trellis runs them through the CLI.
//
// It decides nothing and appends no events of its own: the scenarios
// call the server, whose domains decide and append.
package features
