package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// TestBenchOnExternalCluster: `trellis bench ... --nats-url` runs on that
// NATS server with the replicas asked for, leaves no Trellis stream
// behind, and refuses a server that holds Trellis streams (a deployment's
// log) without touching them.
func TestBenchOnExternalCluster(t *testing.T) {
	t.Parallel()
	ns, err := events.StartEmbedded(events.EmbeddedConfig{StoreDir: t.TempDir(), Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	url := ns.ClientURL()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	noTrellisStreams := func(when string) {
		t.Helper()
		for _, name := range events.StreamNames() {
			if _, err := js.Stream(ctx, name); !errors.Is(err, jetstream.ErrStreamNotFound) {
				t.Fatalf("%s: stream %s: %v (want none)", when, name, err)
			}
		}
	}

	code, out, errOut := cli(t, "bench", "queue", "--nats-url", url, "--bench-replicas", "1", "--tasks", "200", "--workers", "4", "--seconds", "0.5", "--rate", "100", "--json")
	if code != 0 {
		t.Fatalf("bench queue on %s: exit %d\n%s%s", url, code, out, errOut)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench queue --json: %v\n%s", err, out)
	}
	noTrellisStreams("after the benchmark")

	// The cleanup deletes the streams the run created, and only those: a
	// stream of the same name created again by someone else while the
	// benchmark ran is kept.
	created, err := createBenchStreams(ctx, js, 1, "run-a")
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, events.StreamVine); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: events.StreamVine, Subjects: []string{"trellis.vine.>"}}); err != nil {
		t.Fatal(err)
	}
	created.delete(ctx)
	for _, name := range events.StreamNames() {
		_, err := js.Stream(ctx, name)
		if name == events.StreamVine && err != nil {
			t.Fatalf("the cleanup deleted %s, which it did not create: %v", name, err)
		}
		if name != events.StreamVine && !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Fatalf("stream %s the run created: %v after the cleanup (want deleted)", name, err)
		}
	}
	// A name taken between the check and the creation: a conflict, and
	// the streams the run had created already are deleted, the other
	// kept.
	if _, err := createBenchStreams(ctx, js, 1, "run-b"); trellis.ErrorCode(err) != trellis.CodeConflict || !strings.Contains(err.Error(), events.StreamVine) {
		t.Fatalf("creating the streams beside a foreign %s: %v (want a conflict naming it)", events.StreamVine, err)
	}
	for _, name := range events.StreamNames() {
		_, err := js.Stream(ctx, name)
		if name == events.StreamVine && err != nil {
			t.Fatalf("the refused run deleted %s: %v", name, err)
		}
		if name != events.StreamVine && !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Fatalf("stream %s after a refused run: %v (want none)", name, err)
		}
	}
	if err := js.DeleteStream(ctx, events.StreamVine); err != nil {
		t.Fatal(err)
	}

	// A server holding Trellis streams is refused, and they are kept.
	store, err := events.NewStore(nc, events.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = cli(t, "bench", "queue", "--nats-url", url, "--bench-replicas", "1", "--tasks", "50")
	if code != 4 || !strings.Contains(errOut, "holds Trellis streams") || !strings.Contains(errOut, "cluster of its own") {
		t.Fatalf("bench on a server in use: exit %d (want 4, conflict)\n%s%s", code, out, errOut)
	}
	if _, err := js.Stream(ctx, events.StreamQueue); err != nil {
		t.Fatalf("the refused benchmark touched the server's streams: %v", err)
	}

	// Bad input.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "queue", "--nats-url", url, "--bench-replicas", "7"}, "bench-replicas"},
		{[]string{"bench", "workers", "--nats-url", url, "--sync-interval", "1s"}, "sync-interval"},
	} {
		if code, _, errOut := cli(t, c.args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Fatalf("%v: exit %d (want 2) naming %s:\n%s", c.args, code, c.want, errOut)
		}
	}
}
