// Package handlers composes Trellis's domains into the one Service the
// transports call: the queue (package taskqueue), VINE graphs (package
// vinegraph), agent memory (package agentmemory), code memory (package
// codememory), audit (package audit) and workflows (package workflow),
// with the projections behind their reads, which it starts, stops,
// replays and rebuilds as of a cut (RebuildAt) together. The domains
// decide and append their events; this package appends none and decides
// nothing of its own beyond the cross-cutting reads: the live feed,
// recent activity and who holds which task, and task checkpoints.
//
// The HTTP API (httpapi), the MCP server (mcpapi) and the server side of
// the NATS API (natsapi) are thin transports over the root package's
// domain interfaces, which the Service in this package satisfies; the Go side of the NATS API is package client.
package handlers
