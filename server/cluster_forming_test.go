package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/trellis/trellis/server"
)

// A Trellis server started while its cluster is still forming (a node not
// yet up: JetStream temporarily unavailable, or no third peer for a
// three-replica stream) waits for the node instead of failing.
func TestStartWaitsForClusterPeers(t *testing.T) {
	t.Parallel()
	ports := []int{freePort(t), freePort(t), freePort(t)}
	var routes []*url.URL
	for _, p := range ports {
		u, _ := url.Parse(fmt.Sprintf("nats-route://127.0.0.1:%d", p))
		routes = append(routes, u)
	}
	node := func(i int) *natsserver.Server {
		ns, err := natsserver.NewServer(&natsserver.Options{
			ServerName: fmt.Sprintf("f%d", i+1), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster: natsserver.ClusterOpts{Name: "trellis-forming", Host: "127.0.0.1", Port: ports[i]},
			Routes:  routes,
		})
		if err != nil {
			t.Fatal(err)
		}
		go ns.Start()
		t.Cleanup(ns.Shutdown)
		if !ns.ReadyForConnections(20 * time.Second) {
			t.Fatalf("node %d not ready", i+1)
		}
		return ns
	}
	var urls []string
	for i := 0; i < 2; i++ {
		urls = append(urls, node(i).ClientURL())
	}
	// The last node is not up: JetStream has no meta leader yet, or no
	// third peer for a third replica.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	started := make(chan error, 1)
	go func() {
		srv, err := server.Start(ctx, server.Config{DataDir: t.TempDir(), NATSURL: strings.Join(urls, ","), Replicas: 3,
			Logger: slog.New(slog.DiscardHandler)})
		if err == nil {
			t.Cleanup(srv.Close)
		}
		started <- err
	}()
	select {
	case err := <-started:
		t.Fatalf("the server started (err %v) before the cluster had three nodes for its three-replica streams", err)
	case <-time.After(time.Second):
	}
	node(2)
	if err := <-started; err != nil {
		t.Fatalf("start once the third node joined: %v", err)
	}
}
