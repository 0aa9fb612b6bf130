// Package web is the Trellis dashboard: its built assets (dist/, made from
// src/ by `make ui` with Vite and committed, so building Trellis needs no
// Node toolchain), embedded into the binary, and the handler that serves
// them. The page talks only to the HTTP API it is served by (see
// handlers/httpapi), so that API's checks apply to everything it shows.
//
// It decides nothing and appends no event: every action the page offers
// (retry, cancel, signal) is an HTTP API call.
package web
