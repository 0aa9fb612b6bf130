package eventstest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Cluster is a JetStream cluster of real nats-servers in this process,
// routed to each other on loopback.
type Cluster struct {
	t     testing.TB
	opts  []*server.Options
	Nodes []*server.Server
}

// StartCluster runs an n-node JetStream cluster on loopback (1 s sync
// interval, like Start) and waits until it has a meta leader. Everything
// stops when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	ports := make([]int, n)
	var routes []*url.URL
	for i := range ports {
		ports[i] = FreePort(t)
		u, _ := url.Parse(fmt.Sprintf("nats-route://127.0.0.1:%d", ports[i]))
		routes = append(routes, u)
	}
	return startCluster(t, ports, func(int) []*url.URL { return routes }, "")
}

// startCluster runs a JetStream cluster on loopback whose node i listens
// for routes on ports[i], routes to routesOf(i) and advertises advertise
// as its route address (empty: its own), and waits until it has a meta
// leader. Everything stops when the test ends.
func startCluster(t testing.TB, ports []int, routesOf func(i int) []*url.URL, advertise string) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	for i := range ports {
		c.opts = append(c.opts, &server.Options{
			ServerName:   fmt.Sprintf("n%d", i+1),
			Host:         "127.0.0.1",
			Port:         FreePort(t),
			JetStream:    true,
			StoreDir:     t.TempDir(),
			SyncInterval: time.Second,
			NoLog:        true,
			NoSigs:       true,
			Cluster:      server.ClusterOpts{Name: "trellis-test", Host: "127.0.0.1", Port: ports[i], Advertise: advertise},
			Routes:       routesOf(i),
		})
		c.Nodes = append(c.Nodes, nil)
	}
	for i := range c.opts {
		c.Restart(i)
	}
	t.Cleanup(func() {
		for _, ns := range c.Nodes {
			if ns != nil {
				ns.Shutdown()
				ns.WaitForShutdown()
			}
		}
	})
	c.WaitForLeader(c.URLs())
	return c
}

// URLs returns the client URLs of every node, comma-separated.
func (c *Cluster) URLs() string {
	var out []string
	for _, o := range c.opts {
		out = append(out, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	return strings.Join(out, ",")
}

// URL returns the client URL of node i alone.
func (c *Cluster) URL(i int) string { return fmt.Sprintf("nats://127.0.0.1:%d", c.opts[i].Port) }

// Stop shuts node i down (its data stays for Restart).
func (c *Cluster) Stop(i int) {
	if ns := c.Nodes[i]; ns != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
		c.Nodes[i] = nil
	}
}

// Restart starts node i again with its data and ports.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	o := *c.opts[i]
	ns, err := server.NewServer(&o)
	if err != nil {
		c.t.Fatalf("node %d: %v", i+1, err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		c.t.Fatalf("node %d not ready", i+1)
	}
	c.Nodes[i] = ns
}

// WaitForLeader waits (up to 60 s) until JetStream answers through urls.
func (c *Cluster) WaitForLeader(urls string) {
	c.t.Helper()
	nc, err := nats.Connect(urls)
	if err != nil {
		c.t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("cluster has no JetStream leader: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
