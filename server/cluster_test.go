package server_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/server"
)

// freePort returns a free loopback port outside the ephemeral range, so
// a node restarted on it finds it still free.
func freePort(t *testing.T) int { return eventstest.FreePort(t) }

// startCluster runs a 3-node JetStream cluster on loopback, durable
// (sync always) like deploy/nats-cluster, and returns its client URLs.
func startCluster(t *testing.T) string {
	t.Helper()
	ports := []int{freePort(t), freePort(t), freePort(t)}
	var routes []*url.URL
	for _, p := range ports {
		u, _ := url.Parse(fmt.Sprintf("nats-route://127.0.0.1:%d", p))
		routes = append(routes, u)
	}
	var urls []string
	for i, p := range ports {
		opts := &natsserver.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       -1,
			JetStream:  true,
			StoreDir:   t.TempDir(),
			SyncAlways: true,
			NoLog:      true,
			NoSigs:     true,
			Cluster:    natsserver.ClusterOpts{Name: "trellis-test", Host: "127.0.0.1", Port: p},
			Routes:     routes,
		}
		ns, err := natsserver.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		go ns.Start()
		t.Cleanup(ns.Shutdown)
		if !ns.ReadyForConnections(20 * time.Second) {
			t.Fatalf("node %d not ready", i+1)
		}
		urls = append(urls, ns.ClientURL())
	}
	// Wait for a JetStream meta leader.
	nc, err := nats.Connect(strings.Join(urls, ","))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster has no JetStream leader: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return strings.Join(urls, ",")
}

// TestExternalClusterReplicas: the same code path against an external
// 3-node cluster with replicated streams; concurrent claims stay
// exactly-once and a racing done/fail has exactly one winner (the check
// also handles error 10164 of replicated streams).
func TestExternalClusterReplicas(t *testing.T) {
	t.Parallel()
	urls := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := server.Start(ctx, server.Config{DataDir: t.TempDir(), NATSURL: urls, Replicas: 3, ServeAPI: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.Info().Embedded {
		t.Fatal("server started an embedded NATS despite --nats-url")
	}
	info, err := srv.Store().JetStream().Stream(ctx, "TRELLIS_QUEUE")
	if err != nil {
		t.Fatal(err)
	}
	if r := info.CachedInfo().Config.Replicas; r != 3 {
		t.Fatalf("queue stream has %d replicas; want 3", r)
	}
	svc := srv.Service()
	const n = 60
	for i := 0; i < n; i++ {
		if _, err := svc.Add(ctx, trellis.AddTaskRequest{Objective: fmt.Sprintf("c%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		worker := fmt.Sprintf("w%d", w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				task, err := svc.Next(ctx, trellis.NextRequest{Worker: worker})
				if err != nil {
					t.Error(err)
					return
				}
				if task == nil {
					return
				}
				mu.Lock()
				if seen[task.TaskID] {
					t.Errorf("task %s claimed twice", task.TaskID)
				}
				seen[task.TaskID] = true
				mu.Unlock()
				var wg2 sync.WaitGroup
				var e1, e2 error
				wg2.Add(2)
				go func() {
					defer wg2.Done()
					_, e1 = svc.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: worker, WhatWasDone: "x"})
				}()
				go func() {
					defer wg2.Done()
					_, e2 = svc.Fail(ctx, trellis.FailRequest{TaskID: task.TaskID, Worker: worker, Error: "y"})
				}()
				wg2.Wait()
				if (e1 == nil) == (e2 == nil) {
					t.Errorf("task %s: done %v, fail %v; exactly one must win", task.TaskID, e1, e2)
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("claimed %d of %d", len(seen), n)
	}
}
