package server_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/server"
)

// logCount is how many messages each of Trellis's streams holds (the
// domain streams and the blob bucket's), with their last sequences.
func logCount(t *testing.T, ctx context.Context, srv *server.Server) map[string]string {
	t.Helper()
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, name := range events.StreamNames() {
		s, err := js.Stream(ctx, name)
		if err != nil {
			out[name] = "absent"
			continue
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		out[name] = fmt.Sprintf("%d msgs, last #%d", info.State.Msgs, info.State.LastSeq)
	}
	return out
}

// requireLogUnchanged fails when the streams hold other messages than
// before, or audit verify finds anything.
func requireLogUnchanged(t *testing.T, ctx context.Context, srv *server.Server, before map[string]string, what string) {
	t.Helper()
	after := logCount(t, ctx, srv)
	for name, b := range before {
		if after[name] != b {
			t.Errorf("%s: stream %s changed: %s -> %s", what, name, b, after[name])
		}
	}
	requireVerifyOK(t, ctx, srv)
}

// requireVerifyOK fails when audit verify finds anything in the log.
func requireVerifyOK(t *testing.T, ctx context.Context, srv *server.Server) {
	t.Helper()
	var found []string
	rep, err := audit.Verify(ctx, srv.Store(), audit.VerifyOptions{}, func(f audit.Finding) error {
		found = append(found, f.String())
		return nil
	})
	if err != nil {
		t.Fatalf("audit verify: %v", err)
	}
	if !rep.OK {
		t.Errorf("audit verify: %d findings: %v", rep.Findings, found)
	}
}
