// Command trellis is the one Trellis binary: the server (serve), the MCP
// stdio server (mcp), and the CLI over the task queue, audit and replay.
// Run `trellis --help` for the commands; exit codes are documented in the
// docs/reference/exit-codes.md and in trellis.ExitCode.
package main
