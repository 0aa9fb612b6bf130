// Package natsapi serves Trellis's API over NATS request/reply, so the CLI,
// scripts and workers on any machine that reaches the NATS cluster can use
// a running `trellis serve` without HTTP. Requests go to
// trellis.api.v1.<operation> (queue group "trellis-api", so several servers
// share the load); bodies are the same JSON request types as the HTTP API;
// replies are {"result": ...} or {"error": {"code","field","message"}}.
//
// This package is the server's side: the subjects and operations
// (subjects.go), the bodies without a type in the root package (wire.go),
// and the responder that authorizes, decodes and answers each request
// through the domains' interfaces (Service; the server passes the
// composed handlers.Service). The Go side that sends the requests is
// client.API in package client, Trellis's front door for Go programs.
//
// It decides nothing of the domains' (only whether a request is well formed,
// in time and allowed for its token) and appends no events: the service it
// calls does.
package natsapi
