// Package testdir gives a package's tests a temporary directory for what
// they build (a trellis binary, an example's), removed when they end, so
// a machine that runs the suite again and again does not fill its disk.
package testdir
