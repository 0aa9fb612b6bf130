package chaos

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis/chaos/powerfs"
	"github.com/trellis/trellis/events"
)

// Binaries are the programs a cluster runs.
type Binaries struct {
	NATSServer string // nats-server built from the module version in go.mod
	Trellis    string // cmd/trellis
}

// Build builds both binaries into dir (the Go build cache makes it quick
// after the first time).
func Build(ctx context.Context, dir string) (Binaries, error) {
	b := Binaries{NATSServer: filepath.Join(dir, "nats-server"), Trellis: filepath.Join(dir, "trellis")}
	// One go build links both at once (-o names a directory).
	if o, err := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator),
		"github.com/nats-io/nats-server/v2", "github.com/trellis/trellis/cmd/trellis").CombinedOutput(); err != nil {
		return b, fmt.Errorf("build nats-server and trellis: %w\n%s", err, o)
	}
	for _, bin := range []string{b.NATSServer, b.Trellis} {
		if _, err := os.Stat(bin); err != nil {
			return b, fmt.Errorf("build: %w", err)
		}
	}
	return b, nil
}

// Queue is the queue the harness works.
const Queue = "chaos"

// nodeConfig is a node's configuration: JetStream synced on every write
// (Trellis's durable mode) and a route to each node.
const nodeConfig = `server_name: %s
logtime_utc: true
listen: 0.0.0.0:4222
http: 0.0.0.0:8222
jetstream { store_dir: %q, sync_interval: %s }
cluster { name: chaos, listen: 0.0.0.0:6222, routes: [%s] }
`

// Cluster is a running topology: nodes, Trellis servers and worker pools.
type Cluster struct {
	Dir     string
	Net     *Network
	Nodes   []*Proc // nats-server n1..n3
	Serves  []*Proc // trellis serve, serve i attached to node i+1
	Workers []*Proc // trellis worker pools
	Ledger  string  // one line per execution: task id, attempt
	bins    Binaries
	lease   time.Duration
	disks   []*powerfs.FS // each node's store, when on a power-loss filesystem
	// Replicas is the streams' replica count (3, or 5 on five nodes).
	Replicas int
}

// ClusterConfig shapes a cluster.
type ClusterConfig struct {
	Dir      string
	Suffix   string // makes namespace and link names unique to this run
	Octet    int    // picks the subnet (see NewNetwork; negative: a free one)
	Nodes    int    // 3 or 5
	Replicas int    // the streams' replicas: 3 (default) or up to Nodes
	Workers  int    // pools (each attached to a different node)
	Lease    time.Duration
	Binaries Binaries
	// PowerFS puts each node's store on its own power-loss filesystem.
	PowerFS bool
	// SyncInterval is the nodes' JetStream sync_interval: "always" (the
	// default, Trellis's durable mode) or a duration ("2m", JetStream's
	// own default).
	SyncInterval string
}

// StartCluster builds the network, starts the nodes, waits for a
// JetStream meta leader, then starts two Trellis servers (--replicas
// cfg.Replicas) on different nodes and the worker pools.
func StartCluster(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	if cfg.Nodes <= 0 {
		cfg.Nodes = 3
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 3
	}
	if cfg.Replicas > cfg.Nodes {
		return nil, fmt.Errorf("%d replicas on %d nodes", cfg.Replicas, cfg.Nodes)
	}
	nw, err := NewNetwork(ctx, cfg.Suffix, cfg.Nodes, cfg.Octet)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: cfg.Dir, Net: nw, Ledger: filepath.Join(cfg.Dir, "ledger"), bins: cfg.Binaries, lease: cfg.Lease, Replicas: cfg.Replicas}
	fail := func(err error) (*Cluster, error) {
		c.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	var routes []string
	for i := 1; i <= cfg.Nodes; i++ {
		routes = append(routes, fmt.Sprintf("nats-route://%s:6222", nw.Addr(i)))
	}
	for i := 1; i <= cfg.Nodes; i++ {
		name := fmt.Sprintf("n%d", i)
		dir := filepath.Join(cfg.Dir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fail(err)
		}
		store := filepath.Join(dir, "js")
		if cfg.PowerFS {
			backing := filepath.Join(dir, "disk")
			for _, d := range []string{backing, store} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return fail(err)
				}
			}
			disk, err := powerfs.Mount(backing, store)
			if err != nil {
				return fail(err)
			}
			c.disks = append(c.disks, disk)
		}
		sync := cfg.SyncInterval
		if sync == "" {
			sync = "always"
		}
		conf := filepath.Join(dir, "nats.conf")
		if err := os.WriteFile(conf, []byte(fmt.Sprintf(nodeConfig, name, store, sync, strings.Join(routes, ", "))), 0o644); err != nil {
			return fail(err)
		}
		p := newProc(name, nw.Namespace(i), filepath.Join(dir, "nats.log"), cfg.Binaries.NATSServer, "-c", conf)
		if err := p.Start(); err != nil {
			return fail(err)
		}
		c.Nodes = append(c.Nodes, p)
	}
	if err := c.waitMeta(ctx, 60*time.Second); err != nil {
		return fail(err)
	}
	for i := 0; i < 2; i++ {
		dir := filepath.Join(cfg.Dir, fmt.Sprintf("serve%d", i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fail(err)
		}
		p := newProc(fmt.Sprintf("serve%d", i+1), "", filepath.Join(dir, "serve.log"), cfg.Binaries.Trellis, "serve",
			"--data", dir, "--nats-url", c.NodeURL(serveNode(i, cfg.Nodes)), "--replicas", fmt.Sprint(cfg.Replicas), "--http-addr", "", "--workspace", dir)
		if err := p.Start(); err != nil {
			return fail(err)
		}
		c.Serves = append(c.Serves, p)
		if err := waitLog(ctx, p, "serving (pid", 90*time.Second); err != nil {
			return fail(err)
		}
	}
	for i := 0; i < cfg.Workers; i++ {
		dir := filepath.Join(cfg.Dir, fmt.Sprintf("worker%d", i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fail(err)
		}
		node := workerNode(i, cfg.Nodes)
		exe := fmt.Sprintf(`printf '%%s %%s\n' "$TRELLIS_TASK_ID" "$TRELLIS_ATTEMPT" >> %s`, c.Ledger)
		p := newProc(fmt.Sprintf("worker%d", i+1), "", filepath.Join(dir, "worker.log"), cfg.Binaries.Trellis, "worker",
			"--data", dir, "--nats-url", c.NodeURL(node), "--queue", Queue, "--concurrency", "4",
			"--lease", cfg.Lease.String(), "--backoff", "200ms", "--metrics-addr", "", "--exec", exe)
		if err := p.Start(); err != nil {
			return fail(err)
		}
		c.Workers = append(c.Workers, p)
	}
	return c, nil
}

// serveNode is the node serve i (0-based) attaches to: n1 and n2 on three
// nodes; on five, n1 and n5, so that a partition leaves processes on both
// sides more often.
func serveNode(i, nodes int) int {
	if nodes >= 5 {
		return []int{1, nodes}[i%2]
	}
	return i%nodes + 1
}

// workerNode is the node worker pool i (0-based) attaches to: n1 and n2
// on three nodes; n2 and n4 on five.
func workerNode(i, nodes int) int {
	if nodes >= 5 {
		return []int{2, nodes - 1}[i%2]
	}
	return i%nodes + 1
}

// NodeURL is the client URL of node i (1-based).
func (c *Cluster) NodeURL(i int) string { return fmt.Sprintf("nats://%s:4222", c.Net.Addr(i)) }

// URLs are the client URLs of every node.
func (c *Cluster) URLs() string {
	var urls []string
	for i := range c.Nodes {
		urls = append(urls, c.NodeURL(i+1))
	}
	return strings.Join(urls, ",")
}

// waitMeta waits until JetStream answers account info (a meta leader).
func (c *Cluster) waitMeta(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		nc, err := nats.Connect(c.URLs(), nats.Timeout(time.Second))
		if err == nil {
			js, _ := jetstream.New(nc)
			actx, cancel := context.WithTimeout(ctx, time.Second)
			_, err = js.AccountInfo(actx)
			cancel()
			nc.Close()
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no JetStream meta leader after %s: %w", limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// StreamLeader names the node leading the queue stream and its followers
// (1-based indexes: the other nodes holding a replica), asking again for up to 30 s while the stream has no
// leader or no node answers (just after a fault).
func (c *Cluster) StreamLeader(ctx context.Context) (leader int, followers []int, err error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		leader, followers, err = c.streamLeader(ctx)
		if err == nil || leader != 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return leader, followers, err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (c *Cluster) streamLeader(ctx context.Context) (leader int, followers []int, err error) {
	nc, err := nats.Connect(c.URLs(), nats.Timeout(2*time.Second))
	if err != nil {
		return 0, nil, fmt.Errorf("connect: %w", err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := js.Stream(sctx, events.StreamQueue)
	if err != nil {
		return 0, nil, fmt.Errorf("stream info: %w", err)
	}
	info := st.CachedInfo()
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return 0, nil, fmt.Errorf("%s has no leader", events.StreamQueue)
	}
	peers := map[string]bool{}
	for _, r := range info.Cluster.Replicas {
		if r != nil {
			peers[r.Name] = true
		}
	}
	for i, p := range c.Nodes {
		switch {
		case p.Name == info.Cluster.Leader:
			leader = i + 1
		case peers[p.Name]:
			followers = append(followers, i+1)
		}
	}
	if leader == 0 {
		return 0, nil, fmt.Errorf("leader %q is no node of this cluster", info.Cluster.Leader)
	}
	if n := info.Config.Replicas; n != c.Replicas {
		return leader, followers, fmt.Errorf("%s has %d replicas, not %d", events.StreamQueue, n, c.Replicas)
	}
	return leader, followers, nil
}

// waitLog waits until p's log contains want.
func waitLog(ctx context.Context, p *Proc, want string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if f, err := os.Open(p.log); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if strings.Contains(sc.Text(), want) {
					f.Close()
					return nil
				}
			}
			f.Close()
		}
		if !p.Running() {
			return fmt.Errorf("%s exited before %q (see %s)", p.Name, want, p.log)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not print %q within %s (see %s)", p.Name, want, limit, p.log)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Close stops every process (SIGKILL, by PID) and removes the network.
func (c *Cluster) Close(ctx context.Context) {
	for _, group := range [][]*Proc{c.Workers, c.Serves, c.Nodes} {
		for _, p := range group {
			p.Kill9()
		}
	}
	for _, d := range c.disks {
		_ = d.Unmount()
	}
	c.Net.Close(ctx)
}
