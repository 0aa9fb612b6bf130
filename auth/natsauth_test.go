package auth_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
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

// TestNATSAuthTokenWaitsForTheRegistry: a token holder reconnecting while
// the server is still starting (NATS listens, the registry is not
// attached yet) is not refused: its connection waits, and the client's
// reconnects go on until the registry lets it in (a refusal twice would
// make the client give up reconnecting for good). A bad token is still
// refused once the registry is there.
func TestNATSAuthTokenWaitsForTheRegistry(t *testing.T) {
	t.Parallel()
	_, svc := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tok, err := svc.Create(ctx, auth.CreateRequest{Name: "early", Role: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	na, err := auth.NewNATSAuth()
	if err != nil {
		t.Fatal(err)
	}
	ns, err := events.StartEmbedded(events.EmbeddedConfig{StoreDir: t.TempDir(), Addr: "127.0.0.1:0", SyncInterval: time.Second, Auth: na})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	var refused atomic.Int32
	connected := make(chan *nats.Conn, 1)
	go func() {
		nc, err := nats.Connect(ns.ClientURL(), nats.Token(tok.Token), nats.CustomInboxPrefix(auth.InboxPrefix(tok.Token)),
			nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.Timeout(500*time.Millisecond),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				if authRefusal(err) {
					refused.Add(1)
				}
			}),
			nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
				if authRefusal(err) {
					refused.Add(1)
				}
			}),
			nats.ConnectHandler(func(nc *nats.Conn) { connected <- nc }))
		if err != nil {
			t.Error(err)
		}
		_ = nc
	}()
	// Let the client try for a while before the registry is attached.
	waitFor(t, func() bool { return ns.NumClients() > 0 || refused.Load() > 0 }, "the client to reach the server")
	na.Attach(svc.Registry(), ns)
	wait, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	select {
	case nc := <-connected:
		defer nc.Close()
	case <-wait.Done():
		t.Fatalf("the client never connected once the registry was attached (refused %d times while the server was starting)", refused.Load())
	}
	if n := refused.Load(); n > 0 {
		t.Fatalf("the client was refused %d times while the server was starting", n)
	}
	if _, err := nats.Connect(ns.ClientURL(), nats.Token("trellis_bogus")); err == nil {
		t.Fatal("a bad token was let in")
	}
}

func authRefusal(err error) bool {
	return errors.Is(err, nats.ErrAuthorization) || (err != nil && strings.Contains(strings.ToLower(err.Error()), "authorization violation"))
}
