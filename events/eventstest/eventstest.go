package eventstest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/events"
)

// Bundle is what a test gets: the server, a connection, and the store.
type Bundle struct {
	Server   *server.Server
	Conn     *nats.Conn
	Store    *events.Store
	StoreDir string
}

// Options tunes Start.
type Options struct {
	// Durable keeps the production default of fsync on every write. Tests
	// default to a 1 s sync interval: durability across power loss is not
	// what they check, and fsync per write slows CI tenfold.
	Durable bool
	// StoreDir reuses a JetStream directory (restart tests); default a
	// fresh t.TempDir().
	StoreDir string
}

// Start runs an embedded server listening on a free loopback port, creates
// the Trellis streams, and stops everything when the test ends.
func Start(t testing.TB, opts ...Options) *Bundle {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	dir := o.StoreDir
	if dir == "" {
		dir = t.TempDir()
	}
	cfg := events.EmbeddedConfig{StoreDir: dir, Addr: "127.0.0.1:0"}
	if !o.Durable {
		cfg.SyncInterval = time.Second
	}
	ns, err := events.StartEmbedded(cfg)
	if err != nil {
		t.Fatalf("start embedded nats: %v", err)
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		ns.Shutdown()
		t.Fatalf("connect: %v", err)
	}
	store, err := events.NewStore(nc, events.StoreConfig{})
	if err != nil {
		t.Fatalf("store: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := store.Ensure(ctx); err != nil {
		t.Fatalf("ensure streams: %v", err)
	}
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Errorf("close the store: %v", err)
		}
		nc.Close()
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return &Bundle{Server: ns, Conn: nc, Store: store, StoreDir: dir}
}

// OtherStore returns a store on a connection of its own to b's server, as
// another process would have: its requests, reads and caches are not
// b.Store's. The connection closes when the test ends.
func (b *Bundle) OtherStore(t testing.TB) *events.Store {
	t.Helper()
	nc, err := nats.Connect(b.Server.ClientURL())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	store, err := events.NewStore(nc, events.StoreConfig{})
	if err != nil {
		t.Fatalf("store: %v", err)
	}
	return store
}
