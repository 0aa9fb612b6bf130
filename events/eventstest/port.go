package eventstest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
)

// Ports handed out by FreePort lie below Linux's ephemeral range
// (32768–60999), which the kernel uses for the local side of outgoing
// connections: a port taken from that range can be taken again by any
// connection while a node is stopped, and the node then cannot restart
// on it.
const (
	portLow  = 20000
	portHigh = 32000
)

// FreePort returns a loopback TCP port that is free now and lies outside
// the kernel's ephemeral range, so that a server stopped and restarted on
// it (Cluster.Restart) does not find it taken by an outgoing connection.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 200 {
		p := portLow + rand.IntN(portHigh-portLow)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		return p
	}
	t.Fatalf("no free loopback port in %d–%d", portLow, portHigh)
	return 0
}
