//go:build tools

// River's command line (its migrations and `river bench`) is pinned in
// this module's go.mod through this import; run.sh builds it from here.
package main

import _ "github.com/riverqueue/river/cmd/river"
