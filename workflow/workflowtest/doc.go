// Package workflowtest checks a change to a workflow's code against real
// recorded runs before it ships: it replays run histories, exported with
// `trellis audit export` or read from a live log, through the current
// code and reports the first divergence of each (the step the journal
// recorded and the one the code now asks for).
//
// It decides only whether a replay diverges, and appends no events: it reads
// recorded runs.
package workflowtest
