// Package client is the way into a running Trellis for Go programs: it
// connects to a server's NATS API with a URL, a token and TLS options and
// hands out the domain interfaces the root package declares (queue,
// queue administration, schedules, VINE graphs, agent memory, code
// memory, audit) and a worker source that runs a pool of handlers against
// the server.
//
// Connect returns a Client, which checks the server and hides the
// transport. API is the NATS API itself over a connection the caller
// made (every operation, including tokens, export, replay, ingest and
// workflows): the CLI and the features use it; the server's side of the
// same subjects is package handlers/natsapi.
//
// A client never appends to the log itself and needs no server
// credentials: every request is decided and appended by the server, which
// checks the token's role. Programs that run inside the server process use
// the server package instead.
//
//	c, err := client.Connect(ctx, "nats://127.0.0.1:4222", client.Options{Token: os.Getenv("TRELLIS_TOKEN")})
//	if err != nil { ... }
//	defer c.Close()
//	task, err := c.Queue().Add(ctx, trellis.AddTaskRequest{Queue: "emails", Objective: "Send the welcome mail"})
//	pool, err := c.NewPool(workers.HandlerFunc(send), workers.Config{Queue: "emails", Concurrency: 8})
//	err = pool.Run(ctx)
package client
