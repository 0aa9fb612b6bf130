package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/client"
)

func (a *app) tokenCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "token",
		Short: "Manage access tokens of a server started with --auth (admin only)",
		Long: `Tokens authenticate clients on every listener of a server started with --auth: the CLI and workers
over NATS (--token or TRELLIS_TOKEN), HTTP and MCP as "Authorization: Bearer <token>". A token has a
name (the actor of every event its holder causes) and a role: reader (reads), worker (also claims,
heartbeats, finishes and fails tasks, only on its --queue's when given; claims and writes VINE tasks;
records observations) or admin (everything, token management included). Only a token's SHA-256 is
stored, as an event; a revoked token stops working on every listener within seconds.`,
	}
	c.AddCommand(a.tokenCreateCommand(), a.tokenListCommand(), a.tokenRevokeCommand())
	return c
}

// tokenClient reaches the running server's token API.
func (a *app) tokenClient(cmd *cobra.Command) (*client.API, func(), error) {
	s, err := a.serverSession(cmd.Context(), "trellis token")
	if err != nil {
		return nil, nil, err
	}
	if s.client == nil {
		s.close()
		return nil, nil, trellis.Errorf(trellis.CodeInternal, "no API client")
	}
	return s.client, s.close, nil
}

func (a *app) tokenCreateCommand() *cobra.Command {
	var name, role string
	var queues []string
	var asJSON bool
	c := &cobra.Command{
		Use:   "create --name NAME --role admin|worker|reader [--queue Q]...",
		Short: "Create a token and print it once",
		Example: `  trellis token create --name ci-worker --role worker --queue builds
  trellis token create --name dashboard --role reader --json    # {"name": ..., "role": ..., "token": ...}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, done, err := a.tokenClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			c, err := client.CreateToken(cmd.Context(), name, role, queues)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.stdout, struct {
					Name  string    `json:"name"`
					Role  auth.Role `json:"role"`
					Token string    `json:"token"`
				}{c.Name, c.Role, c.Token})
			}
			fmt.Fprintln(a.stdout, c.Token)
			scope := "every queue"
			if len(c.Queues) > 0 {
				scope = "queues " + strings.Join(c.Queues, ", ")
			}
			fmt.Fprintf(a.stderr, "token %q (%s, %s) created: this is the only time it is shown; only its hash is stored\n", c.Name, c.Role, scope)
			return nil
		},
	}
	c.Flags().StringVar(&name, "name", "", "token name: 1-64 characters of A-Z a-z 0-9 _ - (the actor of its holder's events)")
	c.Flags().StringVar(&role, "role", "", "admin, worker or reader")
	c.Flags().StringArrayVar(&queues, "queue", nil, "a queue a worker token may work (repeatable; default every queue)")
	c.Flags().BoolVar(&asJSON, "json", false, `print {"name", "role", "token"}`)
	return c
}

func (a *app) tokenListCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List tokens (names, roles, queues, revoked; never the tokens)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, done, err := a.tokenClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			list, err := client.ListTokens(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.stdout, list)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tROLE\tQUEUES\tSTATUS\tCREATED\tBY")
			for _, t := range list {
				status := "active"
				if t.Revoked {
					status = "revoked"
				}
				q := strings.Join(t.Queues, ",")
				if q == "" {
					q = "*"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Role, q, status, t.CreatedAt.Format(time.RFC3339), t.CreatedBy)
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) tokenRevokeCommand() *cobra.Command {
	var reason string
	var asJSON bool
	c := &cobra.Command{
		Use:     "revoke NAME",
		Short:   "Revoke a token: it stops working on every listener within seconds",
		Example: "  trellis token revoke ci-worker --reason 'laptop lost'",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			client, done, err := a.tokenClient(cmd)
			if err != nil {
				return err
			}
			defer done()
			t, err := client.RevokeToken(cmd.Context(), args[0], reason)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.stdout, t)
			}
			fmt.Fprintf(a.stdout, "token %q revoked\n", t.Name)
			return nil
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why (recorded in the event)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the revoked token as JSON")
	return c
}
