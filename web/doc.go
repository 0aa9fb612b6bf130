// Package web is the Trellis dashboard: its built assets (dist/, made from
// src/ by `make ui` with Vite and committed, so building Trellis needs no
// Node toolchain), embedded into the binary, and the handler that serves
// them. The page talks only to the HTTP API it is served by (see
// handlers/httpapi), so that API's checks apply to everything it shows.
//
// It decides nothing and appends no event: every action the page offers
// (add, retry and cancel tasks, pause and resume a queue, signal and
// cancel a workflow run) is an HTTP API call, offered only to a token
// whose role may make it (GET /v1/whoami) and checked by the server.
package web
