package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/handlers/mcpapi"
	"github.com/trellis/trellis/server"
)

func (a *app) mcpCommand() *cobra.Command {
	var worker string
	c := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the MCP tools (queue_add, queue_next, queue_done, ...) over stdio",
		Long: "Runs an MCP server on stdin/stdout for agent clients. It uses a running trellis server when one\n" +
			"answers (TRELLIS_NATS_URL or the data dir), else Trellis in-process on the data dir.\n\n" +
			"A tool call that names no worker acts as --worker (env TRELLIS_WORKER), else as\n" +
			"mcp:<client name>@<host>:<parent pid>: the agent client that started this process, so a\n" +
			"server the client restarts keeps its claims and two clients never share one.",
		Example: `  claude mcp add trellis -- trellis mcp --data /path/to/data
  claude mcp add trellis -e TRELLIS_WORKER=alice -- trellis mcp`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if worker != "" {
				if err := trellis.ValidateWorkerID(worker); err != nil {
					return trellis.FieldError("worker", "%q is not a worker id (--worker or TRELLIS_WORKER): use 1-128 characters of A-Z a-z 0-9 _ . : @ / + -", worker)
				}
			}
			s, err := a.openSession(cmd.Context())
			if err != nil {
				return err
			}
			defer s.close()
			return mcpapi.ServeStdio(cmd.Context(), mcpapi.NewServerWith(s.queue, mcpapi.Config{Version: server.Version, Worker: worker}))
		},
	}
	c.Flags().StringVar(&worker, "worker", os.Getenv("TRELLIS_WORKER"), "worker id of calls that name none (env TRELLIS_WORKER; default mcp:<client name>@<host>:<parent pid>)")
	return c
}
