package server_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/server"
)

// blackHoles listens on n loopback ports that accept connections and
// never answer (a NATS client waits its connect timeout on each); it
// returns their URLs and the count of connections accepted.
func blackHoles(t *testing.T, n int) ([]string, *atomic.Int64) {
	t.Helper()
	var accepted atomic.Int64
	var mu sync.Mutex
	var conns []net.Conn
	var urls []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		urls = append(urls, "nats://"+ln.Addr().String())
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return urls, &accepted
}

// TestQuorumLossWithdrawsBeforeSearching: a serve whose NATS node loses
// its quorum (the two other nodes stopped) while it knows five more
// servers that never answer (each scout waits its 2 s connect timeout).
// It must leave the API at once, not after a search for another node
// has asked all five: when /healthz first says 503, the search has not
// reached the last of them.
func TestQuorumLossWithdrawsBeforeSearching(t *testing.T) {
	t.Parallel()
	c := eventstest.StartCluster(t, 3)
	// The serve's node must not lead the meta group: a leader cut off
	// goes on answering JetStream's account information for 10 s, and
	// the search, started on the stream's failing probe, would then
	// run well before the withdrawal.
	node := 0
	for i, ns := range c.Nodes {
		if ns.JetStreamIsLeader() {
			node = (i + 1) % len(c.Nodes)
		}
	}
	holes, accepted := blackHoles(t, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	urls := strings.Join(append([]string{c.URL(node)}, holes...), ",")
	srv, err := server.Start(ctx, server.Config{DataDir: t.TempDir(), NATSURL: urls, Replicas: 3, ServeAPI: true, HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if code, body := httpGet(srv, "/healthz"); code != 200 {
		t.Fatalf("healthz %d %s", code, body)
	}
	if !strings.HasSuffix(srv.Conn().ConnectedUrl(), strings.TrimPrefix(c.URL(node), "nats://")) {
		t.Fatalf("the serve is on %s, not node %d", srv.Conn().ConnectedUrl(), node+1)
	}
	start := accepted.Load() // the connect may have tried some
	others := []int{(node + 1) % 3, (node + 2) % 3}
	for _, i := range others {
		c.Stop(i)
	}
	waitUntil(t, "healthz 503", func() bool { code, _ := httpGet(srv, "/healthz"); return code == 503 })
	if n := accepted.Load() - start; n >= int64(len(holes)) {
		t.Fatalf("the serve left the API only after its search had asked all %d silent servers", n)
	}
	// Back to a quorum, for a quick close.
	for _, i := range others {
		c.Restart(i)
	}
	waitUntil(t, "healthz 200 again", func() bool { code, _ := httpGet(srv, "/healthz"); return code == 200 })
}
