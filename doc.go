// Package trellis holds the domain types at the centre of Trellis, an
// event-sourced workflow engine for fleets of AI agents and programs built on
// NATS JetStream: task packets, checkpoints, the request types every
// transport (CLI, HTTP, MCP, NATS) shares, and the stable error codes.
//
// The packages around it are named for what they hold: events (the log),
// handlers (the command side), projections (read models), workers (pools),
// and cmd/trellis (the binary).
package trellis
