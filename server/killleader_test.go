package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/client"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/server"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/workers"
)

// natsProc is one nats-server process of the test cluster.
type natsProc struct {
	name string
	cmd  *exec.Cmd
	port int
	done chan struct{}
}

// buildNATSServer builds the nats-server binary from the module Trellis
// depends on (cached by the Go build cache after the first time).
func buildNATSServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nats-server")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2").CombinedOutput()
	if err != nil {
		t.Fatalf("build nats-server: %v\n%s", err, out)
	}
	return bin
}

// clusterConfig is a node's configuration: JetStream synced on every
// write, a route to each node, and one account with two users, as in
// deploy/nats-cluster: "trellis" (the Trellis servers: everything) and
// "client" (the CLI and workers: only API requests and replies).
const clusterConfig = `server_name: %s
listen: 127.0.0.1:%d
jetstream { store_dir: %q, sync_interval: always }
cluster { name: trellis, listen: 127.0.0.1:%d, routes: [%s] }
accounts {
  TRELLIS {
    jetstream: enabled
    users: [
      { user: trellis, password: %q }
      { user: client, password: %q, permissions: { publish: { allow: ["trellis.api.v1.>"] }, subscribe: { allow: ["_INBOX.>"] } } }
    ]
  }
}
`

// startNATSProcesses starts a 3-node cluster of separate processes.
func startNATSProcesses(t *testing.T, bin, serverPW, clientPW string) []*natsProc {
	t.Helper()
	var client, route []int
	for i := 0; i < 3; i++ {
		client = append(client, freePort(t))
		route = append(route, freePort(t))
	}
	var routes []string
	for _, p := range route {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	var procs []*natsProc
	for i := 0; i < 3; i++ {
		dir := t.TempDir()
		name := fmt.Sprintf("n%d", i+1)
		conf := filepath.Join(dir, name+".conf")
		body := fmt.Sprintf(clusterConfig, name, client[i], filepath.Join(dir, "js"), route[i], strings.Join(routes, ", "), serverPW, clientPW)
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-c", conf)
		logf, _ := os.Create(filepath.Join(dir, name+".log")) // kept in the test's temp dir
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := &natsProc{name: name, cmd: cmd, port: client[i], done: make(chan struct{})}
		go func() { _ = cmd.Wait(); close(p.done) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-p.done
		})
		procs = append(procs, p)
	}
	for _, p := range procs {
		deadline := time.Now().Add(20 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p.port), 200*time.Millisecond)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not listen", p.name)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return procs
}

func clusterURLs(procs []*natsProc, user, pw string) string {
	var urls []string
	for _, p := range procs {
		urls = append(urls, fmt.Sprintf("nats://%s:%s@127.0.0.1:%d", user, pw, p.port))
	}
	return strings.Join(urls, ",")
}

// TestKillStreamLeaderMidRun: a real 3-node cluster of separate
// nats-server processes with accounts (the Trellis servers' user and a
// client user that may only send API requests), two Trellis servers with
// --auth and replicas 3, and two remote worker pools with a worker token.
// While tasks are added and worked, the queue stream's leader is killed
// with SIGKILL. Every acknowledged add must be present, every task
// completed exactly once, and progress must resume; how fast is logged.
func TestKillStreamLeaderMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nats-server and runs a cluster of processes")
	}
	t.Parallel()
	bin := buildNATSServer(t)
	serverPW, clientPW := "server-secret-0123456789", "client-secret-0123456789"
	procs := startNATSProcesses(t, bin, serverPW, clientPW)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
	adminSecret := "trellis_admin-for-the-cluster-test-0123456789"
	// The cluster elects its JetStream meta leader first: a JetStream
	// request sent before that gets no answer at all.
	probe, err := nats.Connect(clusterURLs(procs, "trellis", serverPW))
	if err != nil {
		t.Fatal(err)
	}
	pjs, _ := jetstream.New(probe)
	for deadline := time.Now().Add(30 * time.Second); ; {
		actx, acancel := context.WithTimeout(ctx, time.Second)
		_, err := pjs.AccountInfo(actx)
		acancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster has no JetStream meta leader: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	probe.Close()
	var srvs []*server.Server
	for i := 0; i < 2; i++ {
		sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
		srv, err := server.Start(sctx, server.Config{DataDir: t.TempDir(), NATSURL: clusterURLs(procs, "trellis", serverPW),
			Replicas: 3, ServeAPI: true, Auth: true, AdminToken: adminSecret, Logger: quiet})
		scancel()
		if err != nil {
			t.Fatalf("trellis server %d: %v", i, err)
		}
		t.Cleanup(srv.Close)
		srvs = append(srvs, srv)
	}
	workerToken, err := srvs[0].Auth().Create(ctx, auth.CreateRequest{Name: "fleet", Role: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	clientConn := func(token string) *client.API {
		nc, err := nats.Connect(clusterURLs(procs, "client", clientPW), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond),
			nats.CustomInboxPrefix(auth.InboxPrefix(token)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return client.NewAPI(nc, 20*time.Second).WithToken(token)
	}
	admin := clientConn(adminSecret)
	// The client user cannot append: publishing an event is refused.
	if nc, err := nats.Connect(clusterURLs(procs, "client", clientPW)); err == nil {
		js, _ := jetstream.New(nc)
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		if _, err := js.Publish(pctx, "trellis.queue.default.x.added", []byte("{}")); err == nil {
			t.Error("the client user appended to the queue stream")
		}
		pcancel()
		nc.Close()
	}

	var ran sync.Map // task id -> runs
	handler := workers.HandlerFunc(func(ctx context.Context, task *trellis.Task, _ *workers.Progress) (*trellis.Checkpoint, error) {
		v, _ := ran.LoadOrStore(task.TaskID, new(atomic.Int32))
		v.(*atomic.Int32).Add(1)
		time.Sleep(10 * time.Millisecond)
		return &trellis.Checkpoint{WhatWasDone: "ok"}, nil
	})
	wctx, stopWorkers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		pool, err := workers.NewWithSource(clientConn(workerToken.Token).WorkerSource(), handler, workers.Config{
			Worker: fmt.Sprintf("fleet/p%d", i), Concurrency: 4, Lease: 4 * time.Second, FetchWait: 500 * time.Millisecond, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = pool.Run(wctx) }()
	}

	// Add tasks at a steady pace through both servers (the API's queue
	// group spreads them), recording every acknowledged add.
	const total = 240
	var mu sync.Mutex
	var acked []string
	var ackTimes []time.Time
	addDone := make(chan struct{})
	go func() {
		defer close(addDone)
		for i := 0; i < total; i++ {
			actx, acancel := context.WithTimeout(ctx, 20*time.Second)
			task, err := admin.Add(actx, trellis.AddTaskRequest{Objective: fmt.Sprintf("t%d", i), IdempotencyKey: fmt.Sprintf("k%d", i)})
			acancel()
			if err == nil {
				mu.Lock()
				acked = append(acked, task.TaskID)
				ackTimes = append(ackTimes, time.Now())
				mu.Unlock()
			}
			time.Sleep(15 * time.Millisecond)
		}
	}()
	js := srvs[0].Store().JetStream()
	doneCount := func() int { // as either server sees it
		n := -1
		for _, srv := range srvs {
			lctx, lcancel := context.WithTimeout(ctx, 2*time.Second)
			l, err := srv.Service().List(lctx, trellis.ListRequest{Status: trellis.StatusDone, Limit: trellis.MaxListLimit})
			lcancel()
			if err == nil {
				n = max(n, len(l.Tasks))
			}
		}
		return n
	}
	for doneCount() < total/3 {
		if ctx.Err() != nil {
			t.Fatal("no progress before the kill")
		}
		time.Sleep(50 * time.Millisecond)
	}
	st, err := js.Stream(ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	leader := st.CachedInfo().Cluster.Leader
	var victim *natsProc
	for _, p := range procs {
		if p.name == leader {
			victim = p
		}
	}
	if victim == nil {
		t.Fatalf("no process for stream leader %q", leader)
	}
	before := doneCount()
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-victim.done
	// Progress resumes: more tasks done than at the kill.
	var resumed time.Duration
	for {
		if n := doneCount(); n > before {
			resumed = time.Since(killed)
			break
		}
		if time.Since(killed) > 60*time.Second {
			t.Fatal("no task was completed within 60 s of killing the stream leader")
		}
		time.Sleep(20 * time.Millisecond)
	}
	<-addDone
	mu.Lock()
	ids := append([]string(nil), acked...)
	var firstAckAfter time.Duration
	for _, at := range ackTimes {
		if at.After(killed) {
			firstAckAfter = at.Sub(killed)
			break
		}
	}
	mu.Unlock()
	// Every acknowledged add is completed, exactly once. Either server
	// may answer the reads (one whose projection feed is still
	// recovering from the failover may not yet).
	// Wait for the acknowledged tasks themselves, not a count: an add in
	// doubt at the kill (not acknowledged) may be stored and done too.
	deadline := time.Now().Add(90 * time.Second)
	var listErrs []error
	done := map[string]bool{}
	for {
		for _, srv := range srvs {
			lctx, lcancel := context.WithTimeout(ctx, 5*time.Second)
			l, err := srv.Service().List(lctx, trellis.ListRequest{Status: trellis.StatusDone, Limit: trellis.MaxListLimit})
			lcancel()
			if err != nil {
				listErrs = append(listErrs, err)
				continue
			}
			for _, task := range l.Tasks {
				done[task.TaskID] = true
			}
		}
		missing := 0
		for _, id := range ids {
			if !done[id] {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acknowledged tasks not done 90 s after the adds ended (list errors: %v)", missing, len(ids), listErrs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(listErrs) > 0 {
		t.Logf("reads refused on the way (a server's projection catching up after the failover): %d, last %v", len(listErrs), listErrs[len(listErrs)-1])
	}
	stopWorkers()
	wg.Wait()
	reruns := 0
	for _, id := range ids {
		recs, err := srvs[1].Service().Audit(ctx, id)
		if err != nil {
			t.Fatalf("acknowledged task %s: %v", id, err)
		}
		completed := 0
		for _, r := range recs {
			if r.Type == taskqueue.Completed {
				completed++
			}
		}
		if completed != 1 {
			t.Errorf("task %s completed %d times", id, completed)
		}
		if v, ok := ran.Load(id); ok && v.(*atomic.Int32).Load() > 1 {
			reruns++
		}
	}
	t.Logf("killed stream leader %s with %d of %d tasks done; progress resumed %v after the kill (first acknowledged add after it: %v); "+
		"%d acknowledged adds of %d, all completed once; %d handler runs repeated after a lost lease",
		leader, before, total, resumed.Round(time.Millisecond), firstAckAfter.Round(time.Millisecond), len(ids), total, reruns)
}
