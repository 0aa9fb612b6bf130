package chaos

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestPacketFaults: on a network of the harness (one namespace, its veth
// pair, the bridge), an echo server inside the namespace answers a client
// outside it. Under Delay every answer takes at least the delay (each
// packet the node sends is held: a lower bound, never an upper one);
// under a loss of every packet no connection can be made, and once the
// faults are removed the link works as before. Skips without root or the
// iptables command.
func TestPacketFaults(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("needs the iptables command")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := Available(ctx); err != nil {
		t.Skipf("network namespaces unavailable: %v", err)
	}
	nw, err := NewNetwork(ctx, randomSuffix(), 1, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer nw.Close(context.WithoutCancel(ctx))
	var ln net.Listener
	if err := inNamespace(nw.Namespace(1), func() (err error) {
		ln, err = net.Listen("tcp", nw.Addr(1)+":0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	addr := ln.Addr().String()
	// roundTrip connects, echoes one byte and says how long the echo took.
	roundTrip := func(timeout time.Duration) (time.Duration, error) {
		c, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(timeout))
		start := time.Now()
		if _, err := c.Write([]byte{1}); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	}
	if _, err := roundTrip(30 * time.Second); err != nil {
		t.Fatalf("no echo before any fault: %v", err)
	}

	const delay = 150 * time.Millisecond
	undo, err := nw.Delay(ctx, 1, delay, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		d, err := roundTrip(30 * time.Second)
		if err != nil {
			t.Fatalf("no echo under delay: %v", err)
		}
		if d < delay {
			t.Errorf("echo %d came back in %s under a delay of %s", i, d, delay)
		}
	}
	if err := undo(ctx); err != nil {
		t.Fatalf("remove the delay: %v", err)
	}

	undo, err = nw.Loss(ctx, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(time.Second); err == nil {
		t.Error("an echo came back while every packet the node sends is dropped")
	}
	if err := undo(ctx); err != nil {
		t.Fatalf("remove the loss: %v", err)
	}
	if _, err := roundTrip(30 * time.Second); err != nil {
		t.Fatalf("no echo after the faults were removed: %v", err)
	}
}
