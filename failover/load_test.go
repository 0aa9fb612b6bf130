package failover_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/failover"
)

// TestWatchDoesNotProbeWithNowhereToGo: a connection to a lone server
// (no other configured or announced) has nowhere to move, so Watch must
// not probe it; one that knows another server is probed every tick. Both
// watched side by side: the lone one is never probed while the other is
// probed twenty times.
func TestWatchDoesNotProbeWithNowhereToGo(t *testing.T) {
	t.Parallel()
	url := eventstest.Start(t).Server.ClientURL()
	lone, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer lone.Close()
	two, err := nats.Connect(fmt.Sprintf("%s,nats://127.0.0.1:%d", url, eventstest.FreePort(t)), nats.DontRandomize())
	if err != nil {
		t.Fatal(err)
	}
	defer two.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var loneProbes, twoProbes atomic.Int64
	counting := func(n *atomic.Int64) failover.Probe {
		return func(context.Context, *nats.Conn) error { n.Add(1); return nil }
	}
	go failover.Watch(ctx, lone, failover.Config{Probe: counting(&loneProbes), Every: 10 * time.Millisecond, Logger: quiet()})
	go failover.Watch(ctx, two, failover.Config{Probe: counting(&twoProbes), Every: 10 * time.Millisecond, Logger: quiet()})
	waitFor(t, "twenty probes of the connection that knows another server", func() bool { return twoProbes.Load() >= 20 })
	if n := loneProbes.Load(); n != 0 {
		t.Fatalf("the connection to a lone server was probed %d times", n)
	}
}
