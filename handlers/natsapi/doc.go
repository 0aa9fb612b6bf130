// Package natsapi serves Trellis's API over NATS request/reply, so the CLI,
// scripts and workers on any machine that reaches the NATS cluster can use
// a running `trellis serve` without HTTP. Requests go to
// trellis.api.v1.<operation> (queue group "trellis-api", so several servers
// share the load); bodies are the same JSON request types as the HTTP API;
// replies are {"result": ...} or {"error": {"code","field","message"}}.
package natsapi
