// Command order is the example workflow of docs/workflows.md: a worker pool that
// hosts workflow "order" (version 1) on a running Trellis server.
//
//	go run ./workflow/example/order worker [--queue Q]
//
// The workflow takes {"id": "..."}, runs the steps reserve and charge,
// sleeps ORDER_SLEEP (a Go duration, default 0) durably, waits for the
// signal "ship" ({"carrier": "..."}), runs the step ship, and returns
// {"id": ..., "shipped_by": carrier}. Each step, when it actually runs
// (not when replayed), sleeps ORDER_STEP_DELAY (default 0) and then
// appends "RUN_ID STEP" to the file ORDER_LEDGER (when set).
//
// The server is found like every other trellis command: --nats-url (env
// TRELLIS_NATS_URL), else the serve.json of --data (env TRELLIS_DATA,
// default ./data).
//
// It decides the order workflow's steps; the runs' events are appended by
// the workflow engine (package workflow) on TRELLIS_WORKFLOWS.
package main
