package main

import (
	"github.com/spf13/cobra"

	"github.com/trellis/trellis/handlers/mcpapi"
	"github.com/trellis/trellis/server"
)

func (a *app) mcpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve the MCP tools (queue_add, queue_next, queue_done, ...) over stdio",
		Long: "Runs an MCP server on stdin/stdout for agent clients. It uses a running trellis server when one\n" +
			"answers (TRELLIS_NATS_URL or the data dir), else Trellis in-process on the data dir.",
		Example: `  claude mcp add trellis -- trellis mcp --data /path/to/data`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.openSession(cmd.Context())
			if err != nil {
				return err
			}
			defer s.close()
			return mcpapi.ServeStdio(cmd.Context(), mcpapi.NewServer(s.queue, server.Version))
		},
	}
}
