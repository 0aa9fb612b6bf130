package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/server"
)

// TestServerMetrics: /metrics counts what workers record in the log and
// exports the board's gauges and the latency histograms.
func TestServerMetrics(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := server.Start(ctx, server.Config{DataDir: t.TempDir(), NATSAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", SyncInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	svc := srv.Service()
	for i := 0; i < 3; i++ {
		if _, err := svc.Add(ctx, trellis.AddTaskRequest{Objective: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := svc.Next(ctx, trellis.NextRequest{Worker: "w"})
	if b, err := svc.Next(ctx, trellis.NextRequest{Worker: "w"}); err != nil || b == nil {
		t.Fatalf("second claim: %v, %v", b, err)
	}
	if _, err := svc.Done(ctx, trellis.DoneRequest{TaskID: a.TaskID, Worker: "w", WhatWasDone: "ok"}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`trellis_queue_events_total{kind="added",queue="default"} 3`,
		`trellis_queue_events_total{kind="claimed",queue="default"} 2`,
		`trellis_queue_events_total{kind="done",queue="default"} 1`,
		`trellis_queue_in_flight{queue="default"} 1`,
		`trellis_queue_tasks{queue="default",status="queued"} 1`,
		`trellis_queue_claim_latency_seconds_count{queue="default"} 2`,
		`trellis_queue_handler_duration_seconds_count{queue="default"} 1`,
		`go_goroutines`,
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(srv.Info().HTTPURL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		missing := ""
		for _, w := range want {
			if !strings.Contains(string(body), w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %q", missing)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
