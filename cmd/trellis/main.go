package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the CLI and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app := newApp(stdin, stdout, stderr)
	root := app.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var usage *usageError
	if !errors.As(err, &usage) && strings.HasPrefix(err.Error(), "unknown command ") {
		usage = &usageError{err}
	}
	if usage != nil {
		fmt.Fprintf(stderr, "trellis: invalid: %v\n", usage.err)
		return trellis.ExitCode(trellis.CodeInvalid)
	}
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		fmt.Fprintf(stderr, "trellis: %v\n", err)
		return coded.ExitCode()
	}
	te := trellis.AsError(err)
	fmt.Fprintf(stderr, "trellis: %v\n", te)
	return trellis.ExitCode(te.Code)
}

// usageError marks command-line mistakes (unknown flags, missing
// arguments): exit code 2 like invalid input.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// app holds the CLI's streams and global flags.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	dataDir        string
	natsURL        string
	workspaces     []string
	// namedDirs are the directories of the VINE files named on the
	// command line: workspace roots of an in-process session.
	namedDirs []string
	batchMin  int // bench: the store's group-commit batch minimum
	// benchReplicas are the replicas of a benchmark's streams on --nats-url.
	benchReplicas int
	models        modelFlags
	token         string // --token / TRELLIS_TOKEN
	tlsCA         string // --tls-ca / TRELLIS_TLS_CA
	natsCreds     string // --nats-creds
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *app {
	return &app{stdin: stdin, stdout: stdout, stderr: stderr}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "trellis",
		Short:         "Event-sourced workflow engine for fleets of AI agents and programs, on NATS JetStream",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.Version = currentVersion().String()
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentFlags().StringVar(&a.dataDir, "data", envOr("TRELLIS_DATA", "data"), "data directory (env TRELLIS_DATA)")
	root.PersistentFlags().StringVar(&a.natsURL, "nats-url", os.Getenv("TRELLIS_NATS_URL"), "connect to this NATS server or cluster instead of the embedded one (env TRELLIS_NATS_URL)")
	root.PersistentFlags().StringSliceVar(&a.workspaces, "workspace", splitList(os.Getenv("TRELLIS_WORKSPACE")),
		"workspace root(s) holding .vine files and their references (env TRELLIS_WORKSPACE, comma-separated; default the current directory)")
	root.PersistentFlags().StringVar(&a.token, "token", os.Getenv("TRELLIS_TOKEN"), "access token for a server started with --auth (env TRELLIS_TOKEN; or a file named by TRELLIS_TOKEN_FILE)")
	root.PersistentFlags().StringVar(&a.tlsCA, "tls-ca", os.Getenv("TRELLIS_TLS_CA"), "CA certificate (PEM) that verifies the server's TLS certificate, NATS and HTTP (env TRELLIS_TLS_CA)")
	root.PersistentFlags().StringVar(&a.natsCreds, "nats-creds", os.Getenv("TRELLIS_NATS_CREDS"), "NATS credentials file for a cluster with accounts (env TRELLIS_NATS_CREDS)")
	a.models.register(root)
	root.AddCommand(a.serveCommand(), a.tokenCommand(), a.explainCommand(), a.queueCommand(), a.scheduleCommand(), a.workerCommand(), a.vineCommand(), a.taskCommand(), a.observeCommand(), a.consolidateCommand(), a.factsCommand(), a.ingestCommand(), a.queryCommand(), a.chunkCommand(), a.auditCommand(), a.replayCommand(), a.mcpCommand(), a.benchCommand(), a.featuresCommand(), a.versionCommand(), a.workflowCommand(), a.pruneCommand())
	for _, c := range root.Commands() {
		wrapArgs(c)
	}
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		// A token mounted as a file (a Kubernetes Secret, a compose
		// volume) when none is given directly.
		if f := os.Getenv("TRELLIS_TOKEN_FILE"); a.token == "" && f != "" {
			tok, err := auth.ReadSecret(f)
			if err != nil {
				return trellis.Errorf(trellis.CodeInvalid, "TRELLIS_TOKEN_FILE: %w", err)
			}
			a.token = tok
		}
		return nil
	}
	return root
}

// wrapArgs turns positional-argument errors into usage errors.
func wrapArgs(c *cobra.Command) {
	if c.Args != nil {
		check := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return &usageError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
