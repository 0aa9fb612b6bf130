package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/handlers/natsapi"
	"github.com/trellis/trellis/server"
)

// TestForgedReplySubjectIsNotAnswered: a token holder (a reader, on its
// own connection, which may publish only API requests) names an event
// subject, JetStream's API or another client's inbox as the reply subject
// of its requests. The server answers none of them (an answer would be
// stored on the task's subject by the server's own unrestricted
// connection) and runs none of them: the log is unchanged and verifies.
func TestForgedReplySubjectIsNotAnswered(t *testing.T) {
	t.Parallel()
	b := startAuth(t, server.Config{})
	admin, _, err := b.natsClient(t, b.tokens["admin"])
	if err != nil {
		t.Fatal(err)
	}
	task, err := admin.Add(b.ctx, trellis.AddTaskRequest{Objective: "a task the forged replies aim at"})
	if err != nil {
		t.Fatal(err)
	}
	reader, rnc, err := b.natsClient(t, b.tokens["reader"])
	if err != nil {
		t.Fatal(err)
	}
	before := logCount(t, b.ctx, b.srv)
	forged := []string{
		"trellis.queue.default." + task.TaskID + ".completed",
		"trellis.queue." + task.TaskID + ".completed",
		"trellis.auth.mallory.created",
		"$JS.API.STREAM.PURGE.TRELLIS_QUEUE",
		"$O.trellis-blobs.C.x",
		"$KV.x.y",
		"_INBOX.someone-else.1", // not the token's inbox prefix
		"",                      // no reply at all
	}
	for _, op := range []string{natsapi.OpPing, natsapi.OpQueueList, natsapi.OpQueueExport, natsapi.OpQueueAdd} {
		for _, reply := range forged {
			m := nats.NewMsg(natsapi.Prefix + op)
			m.Reply = reply
			m.Data = []byte(`{"objective":"added through a forged reply"}`)
			m.Header.Set(natsapi.HeaderAuthorization, "Bearer "+b.tokens["admin"])
			if op != natsapi.OpQueueAdd {
				m.Header.Set(natsapi.HeaderAuthorization, "Bearer "+b.tokens["reader"])
			}
			if err := rnc.PublishMsg(m); err != nil {
				t.Fatalf("publish %s reply %q: %v", op, reply, err)
			}
		}
	}
	// A request of each operation with a real reply, on the same
	// connection, is handled after the forged ones (one subscription per
	// operation delivers in order).
	if _, err := reader.Ping(b.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.List(b.ctx, trellis.ListRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := reader.Export(b.ctx, &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Add(b.ctx, trellis.AddTaskRequest{Objective: "x"}); trellis.ErrorCode(err) != trellis.CodeUnauthorized {
		t.Fatalf("reader add: %v", err)
	}
	// Replies that were sent anyway would reach the stream in
	// milliseconds; give them a generous moment before counting.
	time.Sleep(500 * time.Millisecond)
	requireLogUnchanged(t, b.ctx, b.srv, before, "forged reply subjects")
}
