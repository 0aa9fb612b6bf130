package eventstest

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Partitioned is a Cluster whose nodes reach each other only through
// links of the test (one TCP forwarder per route, node i to node j), so
// that a node can be cut off from the others — no route in or out —
// while its clients still reach it: the partition a client attached to a
// minority node sees.
type Partitioned struct {
	*Cluster
	links map[[2]int]*link // node i's route to node j (0-based)
}

// StartPartitioned runs an n-node JetStream cluster on loopback whose
// routes go through links (see Isolate), and waits until it has a meta
// leader. Everything stops when the test ends.
func StartPartitioned(t testing.TB, n int) *Partitioned {
	t.Helper()
	p := &Partitioned{links: map[[2]int]*link{}}
	ports := make([]int, n)
	for i := range ports {
		ports[i] = FreePort(t)
	}
	routesOf := func(i int) []*url.URL {
		var routes []*url.URL
		for j := range ports {
			if i == j {
				continue
			}
			l := startLink(t, fmt.Sprintf("127.0.0.1:%d", ports[j]))
			p.links[[2]int{i, j}] = l
			u, _ := url.Parse("nats-route://" + l.ln.Addr().String())
			routes = append(routes, u)
		}
		return routes
	}
	// Advertise a route address nobody listens on: a node told of another
	// by gossip must not route to it around the links.
	p.Cluster = startCluster(t, ports, routesOf, "127.0.0.1:1")
	return p
}

// Isolate cuts node i (0-based) off the other nodes: every route to and
// from it is closed and new ones are refused until Heal. Its clients
// stay connected to it.
func (p *Partitioned) Isolate(i int) {
	for k, l := range p.links {
		if k[0] == i || k[1] == i {
			l.set(true)
		}
	}
}

// Heal mends every link.
func (p *Partitioned) Heal() {
	for _, l := range p.links {
		l.set(false)
	}
}

// link forwards one node's route connections to another node; cut, it
// closes them and refuses new ones.
type link struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

func startLink(t testing.TB, target string) *link {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("link listen: %v", err)
	}
	l := &link{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go l.accept()
	t.Cleanup(func() { _ = ln.Close(); l.set(true) })
	return l
}

func (l *link) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.mu.Lock()
		cut := l.cut
		l.mu.Unlock()
		if cut {
			_ = c.Close()
			continue
		}
		s, err := net.Dial("tcp", l.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		l.mu.Lock()
		if l.cut {
			l.mu.Unlock()
			_ = c.Close()
			_ = s.Close()
			continue
		}
		l.conns[c], l.conns[s] = struct{}{}, struct{}{}
		l.mu.Unlock()
		go l.pipe(s, c)
		go l.pipe(c, s)
	}
}

// pipe copies src to dst until either closes, then closes both.
func (l *link) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	l.mu.Lock()
	delete(l.conns, dst)
	delete(l.conns, src)
	l.mu.Unlock()
}

func (l *link) set(cut bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = cut
	if cut {
		for c := range l.conns {
			_ = c.Close()
		}
		clear(l.conns)
	}
}
