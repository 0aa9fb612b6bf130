package events_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// TestEnsureRightAfterEveryStreamWasDeleted: deleting an account's last
// stream makes nats-server remove the account's empty store directories
// in a goroutine of its own, which can race the next create ("error
// creating store for stream", code 10049). It happened in CI: a features
// run on an external NATS deleted the empty Trellis streams it found and
// started Trellis at once. Ensure right after such a delete must succeed.
// The race is rare: without the retry this test failed in one of 16
// copies run side by side (60 rounds each) with both cores loaded, and
// passes idle; CI's full suite is what loads the machine.
func TestEnsureRightAfterEveryStreamWasDeleted(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	js, err := jetstream.New(b.Conn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for round := 0; round < 60; round++ {
		names := events.StreamNames()
		lister := js.StreamNames(ctx)
		for name := range lister.Name() {
			names = append(names, name) // the blob bucket's stream too
		}
		for _, name := range names {
			if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				t.Fatalf("round %d: delete %s: %v", round, name, err)
			}
		}
		if err := b.Store.Ensure(ctx); err != nil {
			t.Fatalf("round %d: Ensure right after every stream was deleted: %v", round, err)
		}
	}
}

// TestEnsureReportsAStoreThatCannotBeCreated: a store the server can never
// create (the account's streams directory is immutable) is reported after
// a few tries, not waited on like a forming cluster.
func TestEnsureReportsAStoreThatCannotBeCreated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := eventstest.Start(t, eventstest.Options{StoreDir: dir})
	js, err := jetstream.New(b.Conn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := js.DeleteStream(ctx, events.StreamQueue); err != nil {
		t.Fatal(err)
	}
	streams, err := filepath.Glob(filepath.Join(dir, "jetstream", "*", "streams"))
	if err != nil || len(streams) != 1 {
		t.Fatalf("the account's streams directory: %v %v", streams, err)
	}
	// The deleted stream's directory is removed in the background.
	for {
		if _, err := os.Stat(filepath.Join(streams[0], "."+events.StreamQueue)); os.IsNotExist(err) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the deleted stream's directory was never removed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if out, err := exec.Command("chattr", "+i", streams[0]).CombinedOutput(); err != nil {
		t.Skipf("cannot make a directory immutable here (chattr +i): %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", streams[0]).Run() })
	err = b.Store.Ensure(ctx)
	if err == nil || !strings.Contains(err.Error(), "error creating store for stream") {
		t.Fatalf("Ensure = %v; want the server's store error", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("Ensure waited until its context ended: %v", err)
	}
}
