package chaos

import (
	"context"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"os/exec"
	"strings"
	"time"
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
// it needs root and a working `ip netns` (packet delay and loss also
// need iptables: without it those faults are skipped).
func Available(ctx context.Context) error {
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("the ip command is missing: %w", err)
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

// ErrUnsupported is returned when this machine cannot inject a fault
// (delay and loss need the iptables command: the Debian package
// iptables).
var ErrUnsupported = errors.New("this machine cannot inject the fault")

// iptables runs iptables in node i's namespace.
func (nw *Network) iptables(ctx context.Context, i int, args ...string) error {
	if _, err := exec.LookPath("iptables"); err != nil {
		return fmt.Errorf("%w: no iptables command (%v)", ErrUnsupported, err)
	}
	return run(ctx, "ip", append([]string{"netns", "exec", nw.Namespace(i), "iptables", "-w"}, args...)...)
}

// Delay holds every packet node i sends (to its peers and its clients)
// for delay ± jitter before the kernel sends it: an iptables NFQUEUE rule
// on the node's interface hands each packet to a queue of the harness,
// which gives its verdict after the delay (see delayQueue). It returns
// what removes it.
func (nw *Network) Delay(ctx context.Context, i int, delay, jitter time.Duration, number uint64) (func(context.Context) error, error) {
	if _, err := exec.LookPath("iptables"); err != nil {
		return nil, fmt.Errorf("%w: no iptables command (%v)", ErrUnsupported, err)
	}
	q, err := openDelayQueue(nw.Namespace(i), 0, delay, jitter, number)
	if err != nil {
		return nil, err
	}
	rule := []string{"OUTPUT", "-o", nw.peerVeth(i), "-j", "NFQUEUE", "--queue-num", "0", "--queue-bypass"}
	if err := nw.iptables(ctx, i, append([]string{"-I"}, rule...)...); err != nil {
		q.Close(ctx)
		return nil, err
	}
	return func(ctx context.Context) error {
		err := nw.iptables(ctx, i, append([]string{"-D"}, rule...)...)
		q.Close(ctx)
		return err
	}, nil
}

// Loss drops each packet node i sends with probability p (an iptables
// statistic rule on its interface: the kernel drops it, TCP sends it
// again). It returns what removes it.
func (nw *Network) Loss(ctx context.Context, i int, p float64) (func(context.Context) error, error) {
	rule := []string{"OUTPUT", "-o", nw.peerVeth(i), "-m", "statistic", "--mode", "random", "--probability", fmt.Sprintf("%.4f", p), "-j", "DROP"}
	if err := nw.iptables(ctx, i, append([]string{"-I"}, rule...)...); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return nw.iptables(ctx, i, append([]string{"-D"}, rule...)...) }, nil
}

// Cut stops all traffic between nodes a and b, both ways, and leaves
// their other links alone: in each one's namespace a blackhole route to
// the other drops what it sends there (a packet is dropped where it is
// sent, so nothing arrives either way; a new connection fails at once,
// an open one sees silence). Mend undoes it.
func (nw *Network) Cut(ctx context.Context, a, b int) error {
	if err := run(ctx, "ip", "netns", "exec", nw.Namespace(a), "ip", "route", "add", "blackhole", nw.Addr(b)+"/32"); err != nil {
		return err
	}
	return run(ctx, "ip", "netns", "exec", nw.Namespace(b), "ip", "route", "add", "blackhole", nw.Addr(a)+"/32")
}

// Mend undoes Cut.
func (nw *Network) Mend(ctx context.Context, a, b int) error {
	e1 := run(ctx, "ip", "netns", "exec", nw.Namespace(a), "ip", "route", "del", "blackhole", nw.Addr(b)+"/32")
	e2 := run(ctx, "ip", "netns", "exec", nw.Namespace(b), "ip", "route", "del", "blackhole", nw.Addr(a)+"/32")
	return errors.Join(e1, e2)
}

// Close deletes the namespaces (with their veth pairs) and the bridge.
func (nw *Network) Close(ctx context.Context) {
	for i, ns := range nw.nodes {
		_ = run(ctx, "ip", "link", "del", nw.hostVeth(i+1))
		_ = run(ctx, "ip", "netns", "del", ns)
	}
	_ = run(ctx, "ip", "link", "del", nw.bridge)
}
