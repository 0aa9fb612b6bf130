package natsapi_test

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/handlers/natsapi"
)

// freezeProxy forwards TCP connections to a NATS server and can freeze
// them: a frozen connection still looks open to the client, but nothing
// it writes reaches the server (a node that lost power without a reset:
// the client notices only when its pings go unanswered).
type freezeProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	frozen bool
	conns  []net.Conn
}

func startFreezeProxy(t *testing.T, target string) *freezeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezeProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go p.pipe(s, c) // server → client
			go p.pipe(c, s) // client → server, dropped while frozen
		}
	}()
	return p
}

// pipe copies from → to, dropping what arrives while the proxy is frozen.
func (p *freezeProxy) pipe(to, from net.Conn) {
	buf := make([]byte, 32*1024)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			p.mu.Lock()
			frozen := p.frozen
			p.mu.Unlock()
			if !frozen {
				if _, werr := to.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			to.Close()
			return
		}
	}
}

func (p *freezeProxy) freeze() {
	p.mu.Lock()
	p.frozen = true
	p.mu.Unlock()
}

// cut closes every connection and thaws the proxy: clients reconnect
// through it to the server.
func (p *freezeProxy) cut() {
	p.mu.Lock()
	conns := p.conns
	p.conns, p.frozen = nil, false
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// TestStopBeforeTheOutageIsNoticedLeavesNoGhost: serve's quorum watch
// stops its responder when JetStream stops answering, which can be before
// the client library has noticed that its node is gone (a node that lost
// power sends no reset). Stop then drains while the connection looks up:
// its UNSUB and the drain's flush go into a dead connection. A review
// feared the reconnect would subscribe the draining subscriptions again,
// leaving dead members of the API's queue group as in
// TestStopWhileReconnectingLeavesNoGhost. It does not: nats.go ends the
// pending flush when it notices the disconnect, so the drain forgets the
// subscription before the reconnect sends the subscriptions again. This
// test keeps that so.
func TestStopBeforeTheOutageIsNoticedLeavesNoGhost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// A node of its own, so that the only API members on it are the
	// responders of this test.
	srv, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	proxy := startFreezeProxy(t, srv.Addr().String())
	url := fmt.Sprintf("nats://%s", proxy.ln.Addr())
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	cfg := natsapi.ServeConfig{Info: natsapi.PingInfo{Version: "test"}}
	r, err := natsapi.Serve(nc, b.svc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The node goes silent; the responder leaves while the connection
	// still looks up; then the connection breaks and is made again.
	proxy.freeze()
	if !nc.IsConnected() {
		t.Fatal("the connection noticed the freeze: the test would not show the defect")
	}
	r.Stop()
	// The freeze holds: a flush goes unanswered, and the server still
	// holds the stopped responder's subscription (its UNSUB was lost).
	if err := nc.FlushTimeout(300 * time.Millisecond); err == nil {
		t.Fatal("a flush was answered through the frozen proxy")
	}
	if subs := natsapiOps(t, srv, natsapi.Prefix+natsapi.OpPing); len(subs) != 1 {
		t.Fatalf("the server holds %d subscriptions of the stopped responder, want 1 (its UNSUB lost)", len(subs))
	}
	proxy.cut()
	waitUntil(t, "the connection reconnects", func() bool { return nc.IsConnected() && nc.Stats().Reconnects > 0 })
	r, err = natsapi.Serve(nc, b.svc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	subject := natsapi.Prefix + natsapi.OpPing
	if subs := natsapiOps(t, srv, subject); len(subs) != 1 {
		t.Errorf("the server holds %d subscriptions of %s for one responder: %v", len(subs), subject, subs)
	}
	client, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	unanswered := 0
	for range 16 {
		if _, err := client.Request(subject, []byte("{}"), 5*time.Second); err != nil {
			unanswered++
		}
	}
	if unanswered > 0 {
		t.Errorf("%d of 16 pings unanswered after the responder rejoined", unanswered)
	}
}
