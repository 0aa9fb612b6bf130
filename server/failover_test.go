package server_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/client"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/failover"
	"github.com/trellis/trellis/server"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/workers"
)

// TestServeAndPoolsMoveOffACutOffNode: a serve and two worker pools (one
// appending itself, one through the serve's API as a token pool does)
// are attached to node 1 of a three-node cluster, given only its URL.
// Node 1 is cut off from the other two, which keep the quorum; its
// clients stay connected to it. Before the heal — the test never heals —
// the serve must answer the API again through another node, and each
// pool must complete a task added after the cut. Without the move they
// wait for the heal: the serve withdraws from the API, the pools stall.
func TestServeAndPoolsMoveOffACutOffNode(t *testing.T) {
	t.Parallel()
	c := eventstest.StartPartitioned(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := server.Start(ctx, server.Config{DataDir: t.TempDir(), NATSURL: c.URL(0), Replicas: 3, ServeAPI: true, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	connect := func(url string) *nats.Conn {
		nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	// The test's client is on node 2, which keeps the quorum.
	api := client.NewAPI(connect(c.URL(1)), 10*time.Second)

	var mu sync.Mutex
	ranBy := map[string]string{} // task id -> pool
	handler := func(pool string) workers.Handler {
		return workers.HandlerFunc(func(ctx context.Context, task *trellis.Task, _ *workers.Progress) (*trellis.Checkpoint, error) {
			mu.Lock()
			ranBy[task.TaskID] = pool
			mu.Unlock()
			return &trellis.Checkpoint{WhatWasDone: "ok"}, nil
		})
	}
	pctx, stopPools := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopPools(); wg.Wait() }()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := func(name string) workers.Config {
		return workers.Config{Queue: "moves", Worker: name, Concurrency: 2, Lease: 5 * time.Second, FetchWait: 500 * time.Millisecond, Logger: quiet}
	}
	// The local pool, as `trellis worker` without a token runs it.
	lnc := connect(c.URL(0))
	store, err := events.NewStore(lnc, events.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	local, err := workers.New(taskqueue.New(store, taskqueue.Config{}), handler("local"), cfg("local"))
	if err != nil {
		t.Fatal(err)
	}
	// The remote pool, as `trellis worker` with a token runs it: through
	// the API, probed with pings.
	rnc := connect(c.URL(0))
	remote, err := workers.NewWithSource(client.NewAPI(rnc, 10*time.Second).WorkerSource(), handler("remote"), cfg("remote"))
	if err != nil {
		t.Fatal(err)
	}
	ping := func(ctx context.Context, nc *nats.Conn) error {
		_, err := client.NewAPI(nc, 0).Ping(ctx)
		return err
	}
	for _, p := range []struct {
		pool  *workers.Pool
		nc    *nats.Conn
		probe failover.Probe
	}{{local, lnc, failover.Stream(events.StreamQueue, failover.StaleReplica)}, {remote, rnc, ping}} {
		wg.Add(2)
		go func() { defer wg.Done(); _ = p.pool.Run(pctx) }()
		go func() { defer wg.Done(); failover.Watch(pctx, p.nc, failover.Config{Probe: p.probe, Logger: logger}) }()
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	onNode1 := func(nc *nats.Conn) bool {
		return strings.HasSuffix(nc.ConnectedUrl(), strings.TrimPrefix(c.URL(0), "nats://"))
	}
	// Both pools work before the cut.
	// add adds a task and returns its id, "" when the add failed: right
	// after a move the queue stream may have no leader yet, and an add
	// through the API may fail as unavailable. The waits retry.
	add := func() string {
		t.Helper()
		actx, acancel := context.WithTimeout(ctx, 10*time.Second)
		defer acancel()
		task, err := api.Add(actx, trellis.AddTaskRequest{Queue: "moves", Objective: "move"})
		if err != nil {
			t.Logf("add (retried): %v", err)
			return ""
		}
		return task.TaskID
	}
	ranByEach := func(since map[string]bool) (bool, bool) {
		mu.Lock()
		defer mu.Unlock()
		l, r := false, false
		for id, pool := range ranBy {
			if since[id] {
				l, r = l || pool == "local", r || pool == "remote"
			}
		}
		return l, r
	}
	before := map[string]bool{}
	waitFor("both pools to run a task before the cut", func() bool {
		if id := add(); id != "" {
			before[id] = true
		}
		l, r := ranByEach(before)
		return l && r
	})
	if !onNode1(srv.Conn()) || !onNode1(lnc) || !onNode1(rnc) {
		t.Fatal("the serve and the pools are not on node 1 before the cut")
	}

	c.Isolate(0)
	cutAt := time.Now()
	// Added through node 2 after the cut: only a pool that moved off
	// node 1 can claim these.
	after := map[string]bool{}
	waitFor("the serve to answer the API through another node", func() bool {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		defer pcancel()
		_, err := api.Ping(pctx)
		return err == nil && !onNode1(srv.Conn())
	})
	t.Logf("the serve answers again through %s, %s after the cut", srv.Conn().ConnectedUrl(), time.Since(cutAt).Round(time.Millisecond))
	waitFor("both pools to run a task added after the cut", func() bool {
		if id := add(); id != "" {
			after[id] = true
		}
		l, r := ranByEach(after)
		return l && r
	})
	t.Logf("both pools ran tasks added after the cut, %s after it", time.Since(cutAt).Round(time.Millisecond))
	if onNode1(lnc) || onNode1(rnc) {
		t.Fatalf("a pool still on node 1: local %s, remote %s", lnc.ConnectedUrl(), rnc.ConnectedUrl())
	}
	// Every task the pools ran is recorded done.
	mu.Lock()
	var ids []string
	for id := range ranBy {
		ids = append(ids, id)
	}
	mu.Unlock()
	waitFor("every task run to be recorded done", func() bool {
		for _, id := range ids {
			sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
			task, err := api.Show(sctx, id)
			scancel()
			if err != nil || task.Status != trellis.StatusDone {
				return false
			}
		}
		return true
	})
}
