package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// A Fault breaks the cluster and returns what undoes it (restart, heal,
// resume), called after the scenario's heal time.
type Fault struct {
	Name string
	Doc  string
	// PowerFS puts each node's store on a power-loss filesystem (see
	// package powerfs); SyncInterval, when set, replaces the nodes'
	// fsync-per-write with JetStream's interval mode.
	PowerFS      bool
	SyncInterval string
	// NotMixed leaves the fault out of Mixed's picks (faults added after
	// Mixed's numbers were documented, so that a number picks what it
	// picked).
	NotMixed bool
	// Inject breaks the cluster; it returns a description of what it did
	// and the repair.
	Inject func(ctx context.Context, c *Cluster, rng *rand.Rand) (string, func(context.Context) error, error)
}

// Faults lists every fault the harness injects, by name.
func Faults() []Fault {
	return []Fault{
		{Name: "kill-leader", Doc: "kill -9 the queue stream's leader node; restart it after the heal time", Inject: killNode(true)},
		{Name: "kill-follower", Doc: "kill -9 a follower node of the queue stream; restart it after the heal time", Inject: killNode(false)},
		{Name: "kill-serve", Doc: "kill -9 one trellis serve; restart it after the heal time", Inject: killOne(func(c *Cluster) []*Proc { return c.Serves })},
		{Name: "kill-worker", Doc: "kill -9 one worker pool mid-run; restart it after the heal time", Inject: killOne(func(c *Cluster) []*Proc { return c.Workers })},
		{Name: "pause-leader", Doc: "SIGSTOP the leader node past the election timeout; SIGCONT after the heal time", Inject: pauseLeader},
		{Name: "isolate-leader", Doc: "cut the leader node off the network (its bridge port down: silence, no resets); reconnect after the heal time", Inject: isolateLeader},
		{Name: "partition-minority", Doc: "split the nodes, the leader in the minority (3 nodes: alone; 5: with one more), by blackhole routes between the sides; mend after the heal time", Inject: partition(LeaderInMinority)},
		{Name: "partition-majority", Doc: "split the nodes, the leader with a bare majority; mend after the heal time", Inject: partition(LeaderInMajority)},
		{Name: "partition-bridge", Doc: "split the nodes in two sides that only one bridge node sees both of, the leader on one side; mend after the heal time", Inject: partition(LeaderBridged)},
		{Name: "delay", Doc: "hold every packet each node sends 100ms±50ms (an NFQUEUE of the harness; needs iptables); removed after the heal time", Inject: packetFault(100*time.Millisecond, 50*time.Millisecond, 0)},
		{Name: "loss", Doc: "drop 10% of the packets each node sends (iptables statistic); removed after the heal time", Inject: packetFault(0, 0, 0.10)},
		{Name: "delay-loss", Doc: "delay and loss together (50ms±25ms, 5%)", Inject: packetFault(50*time.Millisecond, 25*time.Millisecond, 0.05)},
		{Name: "bitflip-blk", Doc: "kill -9 a follower, flip bits in its newest queue-stream .blk file, restart it", Inject: corruptBlk(false)},
		{Name: "truncate-blk", Doc: "kill -9 a follower, truncate its newest queue-stream .blk file to half, restart it", Inject: corruptBlk(true)},
		{Name: "power-loss-leader", Doc: "the leader node loses power: kill -9, its unsynced writes dropped; restart after the heal time", Inject: powerLoss(false), PowerFS: true},
		{Name: "power-loss-minority", Doc: "the leader and (n-1)/2-1 other replicas lose power at once (3 nodes: the leader; 5: the leader and a follower)", Inject: powerLossMinority, PowerFS: true},
		{Name: "power-loss-all", Doc: "every node loses power at once; restart after the heal time", Inject: powerLoss(true), PowerFS: true},
		{Name: "power-loss-all-interval", Doc: "every node loses power at once while JetStream syncs every 2 minutes (its default, not Trellis's)", Inject: powerLoss(true), PowerFS: true, SyncInterval: "2m"},
		{Name: "partition-clients", Doc: "cut the nodes the first serve and pool are attached to (3 nodes: n1; 5: n1, n2) off the others, which keep the quorum; they must move to a node of the majority; mend after the heal time", Inject: partitionClients, NotMixed: true},
		{Name: "peer-remove-leader", Doc: "membership change: remove the queue stream's leader from its peers; JetStream moves the replica to a node that held none (needs NODES=5 with REPLICAS=3)", Inject: peerRemove(false), NotMixed: true},
		{Name: "peer-remove-isolated", Doc: "isolate the queue stream's leader, then remove it from the stream's peers from the healthy side; reconnect after the heal time (needs NODES=5 with REPLICAS=3)", Inject: peerRemove(true), NotMixed: true},
	}
}

// FaultByName finds a fault.
func FaultByName(name string) (Fault, error) {
	for _, f := range Faults() {
		if f.Name == name {
			return f, nil
		}
	}
	return Fault{}, fmt.Errorf("unknown fault %q", name)
}

func restartNode(c *Cluster, i int) func(context.Context) error {
	return func(ctx context.Context) error { return c.Nodes[i-1].Start() }
}

func killNode(leader bool) func(context.Context, *Cluster, *rand.Rand) (string, func(context.Context) error, error) {
	return func(ctx context.Context, c *Cluster, rng *rand.Rand) (string, func(context.Context) error, error) {
		l, f, err := c.StreamLeader(ctx)
		if err != nil {
			return "", nil, err
		}
		victim := l
		if !leader {
			victim = f[rng.IntN(len(f))]
		}
		c.Nodes[victim-1].Kill9()
		return fmt.Sprintf("killed n%d (leader n%d)", victim, l), restartNode(c, victim), nil
	}
}

func killOne(group func(*Cluster) []*Proc) func(context.Context, *Cluster, *rand.Rand) (string, func(context.Context) error, error) {
	return func(ctx context.Context, c *Cluster, rng *rand.Rand) (string, func(context.Context) error, error) {
		ps := group(c)
		p := ps[rng.IntN(len(ps))]
		p.Kill9()
		return "killed " + p.Name, func(context.Context) error { return p.Start() }, nil
	}
}

func pauseLeader(ctx context.Context, c *Cluster, _ *rand.Rand) (string, func(context.Context) error, error) {
	l, _, err := c.StreamLeader(ctx)
	if err != nil {
		return "", nil, err
	}
	p := c.Nodes[l-1]
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("paused n%d", l), func(context.Context) error { return p.Signal(syscall.SIGCONT) }, nil
}

func isolateLeader(ctx context.Context, c *Cluster, _ *rand.Rand) (string, func(context.Context) error, error) {
	l, _, err := c.StreamLeader(ctx)
	if err != nil {
		return "", nil, err
	}
	if err := c.Net.Isolate(ctx, l); err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("isolated n%d", l), func(ctx context.Context) error { return c.Net.Reconnect(ctx, l) }, nil
}

func powerLoss(all bool) func(context.Context, *Cluster, *rand.Rand) (string, func(context.Context) error, error) {
	return func(ctx context.Context, c *Cluster, _ *rand.Rand) (string, func(context.Context) error, error) {
		if len(c.disks) == 0 {
			return "", nil, fmt.Errorf("the nodes' stores are not on a power-loss filesystem")
		}
		l, _, err := c.StreamLeader(ctx)
		if err != nil {
			return "", nil, err
		}
		victims := []int{l}
		if all {
			victims = nil
			for i := range c.Nodes {
				victims = append(victims, i+1)
			}
		}
		return cutPower(c, victims, l)
	}
}

// powerLossMinority cuts the power of the leader and of followers up to
// a minority of the nodes.
func powerLossMinority(ctx context.Context, c *Cluster, rng *rand.Rand) (string, func(context.Context) error, error) {
	if len(c.disks) == 0 {
		return "", nil, fmt.Errorf("the nodes' stores are not on a power-loss filesystem")
	}
	l, f, err := c.StreamLeader(ctx)
	if err != nil {
		return "", nil, err
	}
	victims := []int{l}
	rng.Shuffle(len(f), func(a, b int) { f[a], f[b] = f[b], f[a] })
	for k := 0; k < (len(c.Nodes)-1)/2-1 && k < len(f); k++ {
		victims = append(victims, f[k])
	}
	return cutPower(c, victims, l)
}

// cutPower kills the victims with SIGKILL and drops their unsynced
// writes; the repair restarts them.
func cutPower(c *Cluster, victims []int, l int) (string, func(context.Context) error, error) {
	dropped := 0
	for _, v := range victims {
		c.Nodes[v-1].Kill9()
	}
	for _, v := range victims {
		dropped += c.disks[v-1].PowerLoss()
	}
	return fmt.Sprintf("power lost on n%v (leader n%d): unsynced writes of %d files dropped", victims, l, dropped), func(ctx context.Context) error {
		for _, v := range victims {
			if err := c.Nodes[v-1].Start(); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// blkFiles are node i's .blk files of the queue stream, newest last.
func (c *Cluster) blkFiles(i int) []string {
	files, _ := filepath.Glob(filepath.Join(c.Dir, fmt.Sprintf("n%d", i), "js", "jetstream", "*", "streams", "TRELLIS_QUEUE", "msgs", "*.blk"))
	sort.Slice(files, func(a, b int) bool {
		sa, _ := os.Stat(files[a])
		sb, _ := os.Stat(files[b])
		return sa.ModTime().Before(sb.ModTime())
	})
	return files
}

func corruptBlk(truncate bool) func(context.Context, *Cluster, *rand.Rand) (string, func(context.Context) error, error) {
	return func(ctx context.Context, c *Cluster, rng *rand.Rand) (string, func(context.Context) error, error) {
		_, f, err := c.StreamLeader(ctx)
		if err != nil {
			return "", nil, err
		}
		victim := f[rng.IntN(len(f))]
		c.Nodes[victim-1].Kill9()
		files := c.blkFiles(victim)
		if len(files) == 0 {
			return "", nil, fmt.Errorf("n%d has no queue-stream .blk file", victim)
		}
		path := files[len(files)-1]
		b, err := os.ReadFile(path)
		if err != nil {
			return "", nil, err
		}
		what := ""
		if truncate {
			b = b[:len(b)/2]
			what = fmt.Sprintf("truncated n%d %s to %d bytes", victim, filepath.Base(path), len(b))
		} else {
			if len(b) == 0 {
				return "", nil, fmt.Errorf("n%d %s is empty", victim, path)
			}
			for k := 0; k < 8; k++ {
				off := rng.IntN(len(b))
				b[off] ^= 1 << rng.IntN(8)
			}
			what = fmt.Sprintf("flipped 8 bits in n%d %s (%d bytes)", victim, filepath.Base(path), len(b))
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return "", nil, err
		}
		return what, restartNode(c, victim), nil
	}
}

// settle gives a fault's time to act before healing, honouring ctx.
func settle(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// Mixed picks n faults at random (the same number picks the same ones),
// to be injected one after the other on one cluster.
func Mixed(number uint64, n int) []Fault {
	rng := rand.New(rand.NewPCG(number, 0x6d69786564))
	var all []Fault
	for _, f := range Faults() {
		if !f.NotMixed {
			all = append(all, f)
		}
	}
	var out []Fault
	for i := 0; i < n; i++ {
		out = append(out, all[rng.IntN(len(all))])
	}
	return out
}
