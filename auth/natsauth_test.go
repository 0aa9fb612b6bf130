package auth_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/events"
)

// TestNATSAuthForgetsClosedConnections: a token holder that connects and
// disconnects again and again leaves no connection id behind (the
// authenticator's memory does not grow with reconnects), and revoking the
// token still closes the connection that is open.
func TestNATSAuthForgetsClosedConnections(t *testing.T) {
	t.Parallel()
	_, svc := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	na, err := auth.NewNATSAuth()
	if err != nil {
		t.Fatal(err)
	}
	ns, err := events.StartEmbedded(events.EmbeddedConfig{StoreDir: t.TempDir(), Addr: "127.0.0.1:0", SyncInterval: time.Second, Auth: na})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	na.Attach(svc.Registry(), ns)
	tok, err := svc.Create(ctx, auth.CreateRequest{Name: "flappy", Role: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	const reconnects = 40
	for i := range reconnects {
		nc, err := nats.Connect(ns.ClientURL(), nats.Token(tok.Token), nats.CustomInboxPrefix(auth.InboxPrefix(tok.Token)))
		if err != nil {
			t.Fatalf("connect %d: %v", i, err)
		}
		nc.Close()
		waitFor(t, func() bool { return ns.NumClients() == 0 }, "the server to see connection %d closed", i)
	}
	nc, err := nats.Connect(ns.ClientURL(), nats.Token(tok.Token), nats.CustomInboxPrefix(auth.InboxPrefix(tok.Token)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if n := na.Tracked(); n > 2 {
		t.Errorf("after %d reconnects the authenticator holds %d connection ids; want at most the open one (and one closing)", reconnects, n)
	}
	if _, err := svc.Revoke(ctx, auth.RevokeRequest{Name: "flappy"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return nc.IsClosed() || !nc.IsConnected() }, "the revoked token's connection to close")
}

// waitFor polls cond until it holds, failing after 60 s.
func waitFor(t *testing.T, cond func() bool, what string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for "+what, args...)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
