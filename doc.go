// Package trellis holds the domain types at the centre of Trellis, an
// event-sourced workflow engine for fleets of AI agents and programs built on
// NATS JetStream: task packets, checkpoints, the request types every
// transport (CLI, HTTP, MCP, NATS) shares, and the stable error codes.
//
// The packages around it are named for what they hold: events (the log),
// command (the one decide-append mechanism), a package per domain
// (taskqueue, vinegraph, agentmemory, codememory, audit, workflow) behind
// the interfaces declared here, handlers (their composition and the
// transports), client (the front door for Go programs), projections (read
// models), workers (pools), and cmd/trellis (the binary).
//
// It decides only what a request may hold (the Normalize and Validate
// functions every transport shares) and appends no events: the domains do.
package trellis
