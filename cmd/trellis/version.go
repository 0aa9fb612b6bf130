package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis/server"
)

// commit is the commit the binary was built from, when the build stamps it
// (make build: -ldflags "-X main.commit=<short hash>[-modified]"); Go's
// own VCS stamp, when present, is used otherwise.
var commit string

// versionInfo is what `trellis version` reports: the release version
// (server.Version, which a release build sets with
// -ldflags "-X github.com/trellis/trellis/server.Version=v1.2.3"), the
// commit the binary was built from when Go recorded it, and the toolchain.
type versionInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// currentVersion reads the version and the build information.
func currentVersion() versionInfo {
	v := versionInfo{Version: server.Version, Commit: commit, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if c, ok := strings.CutSuffix(v.Commit, "-modified"); ok {
		v.Commit, v.Modified = c, true
	}
	if bi, ok := debug.ReadBuildInfo(); ok && v.Commit == "" {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
				if len(v.Commit) > 12 {
					v.Commit = v.Commit[:12]
				}
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	return v
}

// String is the one-line form: "trellis 0.1.0 (commit 0123456789ab,
// modified) go1.26.8 linux/amd64".
func (v versionInfo) String() string {
	s := "trellis " + v.Version
	if v.Commit != "" {
		s += " (commit " + v.Commit
		if v.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return s + " " + v.Go + " " + v.Platform
}

func (a *app) versionCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "version",
		Short:   "Print the version, the commit it was built from and the Go toolchain (also trellis --version)",
		Example: "  trellis version\n  trellis version --json",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := currentVersion()
			if asJSON {
				return printJSON(a.stdout, v)
			}
			_, err := fmt.Fprintln(a.stdout, v)
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON: version, commit, modified, go, platform")
	return c
}
