package chaos

import (
	"context"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"os/exec"
	"strings"
)

// Network is a bridge in the root namespace with one network namespace
// per node, each joined to the bridge by a veth pair. The root namespace
// has an address on the bridge, so processes started outside the
// namespaces (the Trellis servers, workers, the harness) reach every node.
type Network struct {
	suffix string
	prefix string // the first three octets of the subnet, e.g. "10.77.3"
	bridge string
	nodes  []string // namespace names
}

// run runs one command and returns its error with its output.
func run(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Available reports why the harness cannot run here, or nil when it can:
// it needs root and a working `ip netns` and `tc`.
func Available(ctx context.Context) error {
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("the ip command is missing: %w", err)
	}
	if _, err := exec.LookPath("tc"); err != nil {
		return fmt.Errorf("the tc command is missing: %w", err)
	}
	probe := "chprobe" + randomSuffix()
	if err := run(ctx, "ip", "netns", "add", probe); err != nil {
		return fmt.Errorf("ip netns is unavailable (root needed): %w", err)
	}
	return run(ctx, "ip", "netns", "del", probe)
}

// NewNetwork creates the bridge, n namespaces and their veth pairs. The
// names carry suffix, so parallel runs do not collide; octet picks the
// subnet 10.200.octet+1.0/24 (a negative octet: a free one at random).
// Close removes everything.
func NewNetwork(ctx context.Context, suffix string, n int, octet int) (*Network, error) {
	if octet < 0 {
		octet = freeOctet(ctx)
	}
	nw := &Network{suffix: suffix, prefix: fmt.Sprintf("10.%d.%d", 200+octet/250, octet%250+1), bridge: "chb" + suffix}
	fail := func(err error) (*Network, error) {
		nw.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	if err := run(ctx, "ip", "link", "add", nw.bridge, "type", "bridge"); err != nil {
		return nil, err
	}
	steps := [][]string{
		{"ip", "addr", "add", nw.prefix + ".254/24", "dev", nw.bridge},
		{"ip", "link", "set", nw.bridge, "up"},
	}
	for _, s := range steps {
		if err := run(ctx, s[0], s[1:]...); err != nil {
			return fail(err)
		}
	}
	for i := 1; i <= n; i++ {
		ns := fmt.Sprintf("ch%s-n%d", suffix, i)
		host, peer := nw.hostVeth(i), fmt.Sprintf("chp%s%d", suffix, i)
		if err := run(ctx, "ip", "netns", "add", ns); err != nil {
			return fail(err)
		}
		nw.nodes = append(nw.nodes, ns)
		steps := [][]string{
			{"ip", "link", "add", host, "type", "veth", "peer", "name", peer},
			{"ip", "link", "set", peer, "netns", ns},
			{"ip", "link", "set", host, "master", nw.bridge},
			{"ip", "link", "set", host, "up"},
			{"ip", "netns", "exec", ns, "ip", "addr", "add", nw.Addr(i) + "/24", "dev", peer},
			{"ip", "netns", "exec", ns, "ip", "link", "set", peer, "up"},
			{"ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"},
		}
		for _, s := range steps {
			if err := run(ctx, s[0], s[1:]...); err != nil {
				return fail(err)
			}
		}
	}
	return nw, nil
}

// freeOctet picks a subnet no interface of the root namespace uses.
func freeOctet(ctx context.Context) int {
	out, _ := exec.CommandContext(ctx, "ip", "-o", "addr").Output()
	for {
		o := mathrand.IntN(250)
		if !strings.Contains(string(out), fmt.Sprintf(" 10.200.%d.", o+1)) {
			return o
		}
	}
}

func (nw *Network) hostVeth(i int) string { return fmt.Sprintf("chv%s%d", nw.suffix, i) }

func (nw *Network) peerVeth(i int) string { return fmt.Sprintf("chp%s%d", nw.suffix, i) }

// Namespace is the network namespace of node i (1-based).
func (nw *Network) Namespace(i int) string { return nw.nodes[i-1] }

// Addr is the IP address of node i (1-based).
func (nw *Network) Addr(i int) string { return fmt.Sprintf("%s.%d", nw.prefix, i) }

// netem replaces the queueing discipline on both ends of node i's link:
// args are netem parameters ("loss", "100%"), nil removes it.
func (nw *Network) netem(ctx context.Context, i int, args ...string) error {
	ends := []func(...string) []string{
		func(a ...string) []string { return append([]string{"tc", "qdisc"}, a[0], "dev", nw.hostVeth(i)) },
		func(a ...string) []string {
			return append([]string{"ip", "netns", "exec", nw.Namespace(i), "tc", "qdisc"}, a[0], "dev", nw.peerVeth(i))
		},
	}
	var errs []error
	for _, end := range ends {
		if args == nil {
			cmd := append(end("del"), "root")
			if err := run(ctx, cmd[0], cmd[1:]...); err != nil && !strings.Contains(err.Error(), "No such file") && !strings.Contains(err.Error(), "Cannot delete qdisc with handle of zero") {
				errs = append(errs, err)
			}
			continue
		}
		cmd := append(append(end("replace"), "root", "netem"), args...)
		if err := run(ctx, cmd[0], cmd[1:]...); err != nil {
			if strings.Contains(err.Error(), "qdisc kind is unknown") {
				return ErrNoNetem
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Isolate cuts node i off: its bridge port goes down, so nothing it sends
// arrives and nothing reaches it. Its own interface stays up and its
// connections open: the peers and the node notice only silence, as in a
// real partition (no reset, no error).
func (nw *Network) Isolate(ctx context.Context, i int) error {
	return run(ctx, "ip", "link", "set", nw.hostVeth(i), "down")
}

// Reconnect undoes Isolate.
func (nw *Network) Reconnect(ctx context.Context, i int) error {
	return run(ctx, "ip", "link", "set", nw.hostVeth(i), "up")
}

// ErrNoNetem is returned when the kernel has no netem queueing
// discipline (sch_netem): packet delay and loss cannot be injected.
var ErrNoNetem = errors.New("the kernel has no netem queueing discipline (sch_netem)")

// Heal removes any fault on node i's link.
func (nw *Network) Heal(ctx context.Context, i int) error { return nw.netem(ctx, i, nil...) }

// Close deletes the namespaces (with their veth pairs) and the bridge.
func (nw *Network) Close(ctx context.Context) {
	for i, ns := range nw.nodes {
		_ = run(ctx, "ip", "link", "del", nw.hostVeth(i+1))
		_ = run(ctx, "ip", "netns", "del", ns)
	}
	_ = run(ctx, "ip", "link", "del", nw.bridge)
}
