package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/client"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/server"
)

// TestQuorumLossWithdrawsAPI: a serve whose NATS node lost its JetStream
// quorum (the two other nodes of a 3-node cluster gone) stops answering
// API requests (it leaves the queue group, so that other servers answer),
// says 503 on /healthz and 0 in trellis_jetstream_quorum; when the nodes
// come back it serves again.
func TestQuorumLossWithdrawsAPI(t *testing.T) {
	t.Parallel()
	c := eventstest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := server.Start(ctx, server.Config{DataDir: t.TempDir(), NATSURL: c.URL(0), Replicas: 3, ServeAPI: true, HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	nc, err := nats.Connect(c.URL(0))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	client := client.NewAPI(nc, 0)
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.Info().HTTPURL + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	ping := func() error {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := client.Ping(pctx)
		return err
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
	if code, body := get("/healthz"); code != 200 || ping() != nil {
		t.Fatalf("healthz %d %s; ping %v", code, body, ping())
	}
	c.Stop(1)
	c.Stop(2)
	waitFor("healthz 503", func() bool { code, _ := get("/healthz"); return code == 503 })
	if err := ping(); err == nil {
		t.Fatal("the server still answers API requests without a JetStream quorum")
	}
	if _, body := get("/metrics"); !strings.Contains(body, "trellis_jetstream_quorum 0") {
		t.Fatalf("metrics:\n%s", body)
	}
	c.Restart(1)
	c.Restart(2)
	waitFor("healthz 200 again", func() bool { code, _ := get("/healthz"); return code == 200 })
	waitFor("the API again", func() bool { return ping() == nil })
	if _, body := get("/metrics"); !strings.Contains(body, "trellis_jetstream_quorum 1") {
		t.Fatalf("metrics:\n%s", body)
	}
}
