package eventstest

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections to a NATS server and can hold what the
// server sends back: replies are late, not lost (the bytes wait in order,
// so the protocol stays intact). A request whose reply is held past its
// timeout sees a lost acknowledgement although the server acted on it.
type Proxy struct {
	ln     net.Listener
	target string

	mu        sync.Mutex
	holdUntil time.Time
}

// StartProxy listens on a free loopback port and forwards to target
// (host:port) until the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &Proxy{ln: ln, target: target}
	go p.accept()
	t.Cleanup(func() { _ = ln.Close() })
	return p
}

// URL is the nats:// URL clients use to connect through the proxy.
func (p *Proxy) URL() string { return "nats://" + p.ln.Addr().String() }

// HoldReplies delays everything the server sends to clients for d from
// now.
func (p *Proxy) HoldReplies(d time.Duration) {
	p.mu.Lock()
	p.holdUntil = time.Now().Add(d)
	p.mu.Unlock()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		go func() { _, _ = io.Copy(s, c); _ = s.Close() }()
		go p.back(c, s)
	}
}

// back copies server → client, waiting while replies are held.
func (p *Proxy) back(c, s net.Conn) {
	defer c.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			p.mu.Lock()
			wait := time.Until(p.holdUntil)
			p.mu.Unlock()
			if wait > 0 {
				time.Sleep(wait)
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
