package failover_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/failover"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// waitFor polls cond until it holds, failing the test after 60 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// connectToFirst connects to node 1 of c (given only its URL, always
// reconnecting) and waits until the other nodes were announced; the
// connection is closed at the test's end.
func connectToFirst(t *testing.T, c *eventstest.Partitioned) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(c.URL(0), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	waitFor(t, "the cluster's other servers announced", func() bool { return len(nc.Servers()) == 3 })
	return nc
}

// TestWatchMovesOffACutOffNode: a connection given only the URL of node
// 1 of a three-node cluster; node 1 is cut off from the others (its
// client stays connected to it, and it stops announcing the others).
// JetStream must answer through the connection again before the heal,
// through another node.
func TestWatchMovesOffACutOffNode(t *testing.T) {
	t.Parallel()
	c := eventstest.StartPartitioned(t, 3)
	nc := connectToFirst(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go failover.Watch(ctx, nc, failover.Config{Probe: failover.JetStream, Logger: quiet()})
	probe := func() error {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return failover.JetStream(pctx, nc)
	}
	if err := probe(); err != nil {
		t.Fatal(err)
	}
	c.Isolate(0)
	waitFor(t, "JetStream to fail through the cut-off node", func() bool {
		return strings.HasSuffix(nc.ConnectedUrl(), c.URL(0)[len("nats://"):]) && probe() != nil
	})
	t.Logf("servers the connection knows while cut off: %v", nc.Servers())
	// No heal before this: JetStream answers again only through another node.
	waitFor(t, "JetStream to answer again through another node", func() bool {
		return !strings.HasSuffix(nc.ConnectedUrl(), c.URL(0)[len("nats://"):]) && probe() == nil
	})
	c.Heal()
}

// TestMoverStaysWithoutQuorumAnywhere: every node of the cluster cut off
// from the others, so that none has a quorum. The mover must not move
// the connection (no server answers), and must not search again at once:
// many failed probes in a row make one search, not one each (until the
// gap after it, here longer than the test).
func TestMoverStaysWithoutQuorumAnywhere(t *testing.T) {
	t.Parallel()
	c := eventstest.StartPartitioned(t, 3)
	nc := connectToFirst(t, c)
	// A gap longer than the test: a second search is never due.
	m := failover.New(nc, failover.Config{Probe: failover.JetStream, After: 1, Timeout: time.Second, FirstGap: time.Hour, Logger: quiet()})
	for i := range 3 {
		c.Isolate(i)
	}
	ctx := context.Background()
	waitFor(t, "JetStream to fail on every node", func() bool {
		for i := range 3 {
			sc, err := nats.Connect(c.URL(i))
			if err != nil {
				return false
			}
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			err = failover.JetStream(pctx, sc)
			cancel()
			sc.Close()
			if err == nil {
				return false
			}
		}
		return true
	})
	// A search needs the connection up (it may be reconnecting on a
	// busy machine): observe failures until one searched, then more.
	waitFor(t, "a search", func() bool {
		m.Observe(ctx, errors.New("JetStream does not answer"))
		return m.Searches > 0
	})
	for range 20 {
		m.Observe(ctx, errors.New("JetStream does not answer"))
	}
	if m.Moves != 0 || m.Searches != 1 {
		t.Fatalf("with no server answering: %d moves, %d searches for 20 failed probes; want 0 and 1", m.Moves, m.Searches)
	}
	if got := len(m.Known()); got != 3 {
		t.Fatalf("the mover knows %d servers, want 3 (those the cut-off node stopped announcing too): %v", got, m.Known())
	}
}
