// Package mcpapi is Trellis's MCP server: the task queue's tools (queue_add,
// queue_next, queue_done, queue_fail, queue_list, queue_show) over the
// official MCP Go SDK, as a thin transport over a trellis.QueueService.
//
// The tools keep stable names and argument names. Every result carries
// the task packet (or the board listing) as structured content plus a text
// rendering an agent can read. A failure the service reports is a tool
// error (IsError) whose text starts with its stable error code, for example
// "invalid: objective: must not be empty" or "conflict: task ... is already
// done"; it is never turned into a protocol error, so the agent sees it and
// can correct itself. Unknown arguments are rejected the same way.
//
// A claim belongs to a worker. The worker argument is optional: without it
// a call acts as its client's identity, stable across reconnects and
// distinct between clients: over HTTP the worker the client names
// (X-Trellis-Worker header or ?worker=), else "mcp:<client name>@<remote
// host>"; over stdio Config.Worker (TRELLIS_WORKER), else "mcp:<client
// name>@<host>:<parent pid>". identity.of decides it, in one place.
//
// When the service also implements trellis.VineService, the server adds
// the VINE tools (vine_next, vine_read, vine_write, vine_expand, and
// Trellis's atomic vine_claim) and the resources vine://spec/brief and
// vine://spec/full.
//
// When it also implements trellis.MemoryService, the server adds seed
// 004's tools: task_create, task_join, task_objective,
// task_complete_agent, task_complete, task_context, task_list, observe,
// consolidate, facts and consolidation_history.
//
// NewServer and NewServerWith build the server; HTTPHandler serves it over streamable HTTP
// (mounted at /mcp by `trellis serve`) and ServeStdio over stdin/stdout
// (`trellis mcp`).
//
// It decides nothing of the domains' (only whether a tool call's arguments
// are well formed and allowed) and appends no events: the service it calls
// does.
package mcpapi
