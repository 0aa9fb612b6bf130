package main

import (
	"context"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// TestCommandNeverBecomesServerOnExternalCluster reproduces issue 19: with
// no `serve` answering, a CLI command pointed at a 3-node cluster ran
// Trellis in-process with the default replicas and rewrote every stream to
// one replica. It must refuse (exit 7, unavailable) and leave the streams
// as the operator made them.
func TestCommandNeverBecomesServerOnExternalCluster(t *testing.T) {
	t.Parallel()
	c := eventstest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, err := nats.Connect(c.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	op, _ := events.NewStore(nc, events.StoreConfig{Replicas: 3})
	if err := op.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"queue", "list"}, {"audit", "verify"}, {"queue", "add", "--objective", "x"}} {
		code, _, errs := cli(t, append(args, "--nats-url", c.URLs(), "--data", t.TempDir())...)
		if code != 7 || !strings.Contains(errs, "no trellis server answers") || !strings.Contains(errs, "trellis serve --nats-url") {
			t.Fatalf("%v: exit %d (want 7): %s", args, code, errs)
		}
	}
	js, _ := jetstream.New(nc)
	for _, name := range events.StreamNames() {
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if r := st.CachedInfo().Config.Replicas; r != 3 {
			t.Fatalf("stream %s now has %d replicas; a client changed the cluster", name, r)
		}
	}
}

// TestPermissionsViolationSaysSo: a NATS user that may not use the
// JetStream API gets an error naming the permissions violation (exit 6,
// unauthorized), not a minute-long wait for "the cluster to have
// JetStream".
func TestPermissionsViolationSaysSo(t *testing.T) {
	t.Parallel()
	opts := &natsserver.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		Users: []*natsserver.User{{Username: "app", Password: "pw", Permissions: &natsserver.Permissions{
			Publish:   &natsserver.SubjectPermission{Allow: []string{"trellis.>"}},
			Subscribe: &natsserver.SubjectPermission{Allow: []string{"_INBOX.>"}},
		}}},
	}
	ns, err := natsserver.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(20 * time.Second) {
		t.Fatal("nats not ready")
	}
	url := strings.Replace(ns.ClientURL(), "nats://", "nats://app:pw@", 1)
	code, _, errs := cli(t, "serve", "--nats-url", url, "--data", t.TempDir(), "--http-addr", "", "--nats-addr", "127.0.0.1:0")
	if code != 6 || !strings.Contains(errs, "permissions violation") {
		t.Fatalf("serve as a user without the JetStream API: exit %d (want 6): %s", code, errs)
	}
}
