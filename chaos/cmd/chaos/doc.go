// Command chaos runs Trellis's fault-injection matrix (see package chaos)
// and prints a table: fault, runs, acknowledged adds, lost, completed
// twice, executed twice, stuck, resume time, audit verify. It needs root
// (network namespaces and tc). `make chaos` runs it.
//
// It decides nothing of the log and appends no events of its own.
package main
