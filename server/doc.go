// Package server assembles a running Trellis: the data directory lock, the
// embedded nats-server (or a connection to an external NATS cluster), the
// event store, the Service with its projections, the NATS API responder,
// and optionally the HTTP API with the MCP endpoint and /metrics.
//
// `trellis serve`, one-shot CLI commands with no server running, the godog
// features and the benchmarks all start Trellis through this package, so
// there is one code path whether NATS is embedded or clustered.
//
// It decides only how Trellis is started (the lock, embedded or clustered
// NATS, which transports listen); it appends no events itself: the domains
// of the service it starts append theirs, and so does the retention loop it
// runs with --retention (prune records).
package server
