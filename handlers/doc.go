// Package handlers is Trellis's command side: for each domain it loads an
// aggregate by folding its events, validates a command against it, and
// appends the resulting event with the expected last sequence of the whole
// aggregate (DESIGN.md rule 2). A stale append is retried against the
// reloaded aggregate or reported as a conflict.
//
// The HTTP API, the MCP server and the NATS API are thin transports over
// the Service in this package.
package handlers
