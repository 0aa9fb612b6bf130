// Command trellis is the one Trellis binary: the server (serve), the MCP
// stdio server (mcp), and the CLI over the task queue, audit and replay.
// Run `trellis --help` for the commands; exit codes are documented in the
// docs/reference/exit-codes.md and in trellis.ExitCode.
//
// The binary decides nothing of its own: its commands call a server (or the
// service on a data directory), whose domains decide and append their
// events.
package main
