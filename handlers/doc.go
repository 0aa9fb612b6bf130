// Package handlers composes Trellis's domains into the one Service the
// transports call: the queue (package taskqueue), VINE graphs (package
// vinegraph), agent memory (package agentmemory), code memory (package
// codememory) and workflows (package workflow), with the projections
// behind their reads, which it starts, stops and replays together. The
// domains decide and append their events; this package decides nothing of
// its own beyond the cross-cutting reads (the live feed, recent activity,
// task checkpoints) and the audit of the log.
//
// The HTTP API (httpapi), the MCP server (mcpapi) and the NATS API
// (natsapi) are thin transports over the Service in this package.
package handlers
