package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestCLIReferenceIsCurrent: docs/reference/cli-commands.md is generated
// from the commands themselves (their usage, help, examples and flags); a
// command or flag changed without regenerating it fails here. Regenerate
// with TRELLIS_UPDATE_DOCS=1 go test ./cmd/trellis -run TestCLIReferenceIsCurrent.
func TestCLIReferenceIsCurrent(t *testing.T) {
	t.Parallel()
	root := newApp(strings.NewReader(""), io.Discard, io.Discard).rootCommand()
	var b bytes.Buffer
	b.WriteString("# Command reference\n\n")
	b.WriteString("Generated from `trellis --help` of every command (do not edit: run\n")
	b.WriteString("`TRELLIS_UPDATE_DOCS=1 go test ./cmd/trellis -run TestCLIReferenceIsCurrent`).\n")
	b.WriteString("How commands find the server, tokens and output formats: [the command line](../cli.md).\n\n")
	b.WriteString("## Global flags\n\nEvery command takes these:\n\n```\n")
	b.WriteString(root.PersistentFlags().FlagUsages())
	b.WriteString("```\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			fmt.Fprintf(&b, "\n## %s\n\n%s\n\n```\n%s\n```\n", sub.CommandPath(), sub.Short, sub.UseLine())
			if sub.Long != "" && sub.Long != sub.Short {
				fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(sub.Long))
			}
			if sub.Example != "" {
				fmt.Fprintf(&b, "\nExamples:\n\n```sh\n%s\n```\n", strings.TrimRight(sub.Example, "\n"))
			}
			if flags := sub.LocalNonPersistentFlags().FlagUsages(); flags != "" {
				fmt.Fprintf(&b, "\nFlags:\n\n```\n%s```\n", flags)
			}
			walk(sub)
		}
	}
	walk(root)
	path := filepath.Join("..", "..", "docs", "reference", "cli-commands.md")
	if os.Getenv("TRELLIS_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: generate it with TRELLIS_UPDATE_DOCS=1 go test ./cmd/trellis -run TestCLIReferenceIsCurrent", err)
	}
	if !bytes.Equal(have, b.Bytes()) {
		t.Fatalf("%s is not what the commands say: regenerate it with TRELLIS_UPDATE_DOCS=1 go test ./cmd/trellis -run TestCLIReferenceIsCurrent", path)
	}
}
