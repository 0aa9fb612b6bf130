package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/client"
)

// TestQuorumLossWithdrawsAPI: a serve whose NATS node lost its JetStream
// quorum (the two other nodes of a 3-node cluster gone) stops answering
// API requests (it leaves the queue group, so that other servers answer),
// says 503 on /healthz and 0 in trellis_jetstream_quorum; when the nodes
// come back it serves again.
func TestQuorumLossWithdrawsAPI(t *testing.T) {
	t.Parallel()
	c, srv, ctx := servedCluster(t)
	nc, err := nats.Connect(c.URL(0))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	client := client.NewAPI(nc, 0)
	get := func(path string) (int, string) { return httpGet(srv, path) }
	ping := func() error {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := client.Ping(pctx)
		return err
	}
	if code, body := get("/healthz"); code != 200 || ping() != nil {
		t.Fatalf("healthz %d %s; ping %v", code, body, ping())
	}
	c.Stop(1)
	c.Stop(2)
	waitUntil(t, "healthz 503", func() bool { code, _ := get("/healthz"); return code == 503 })
	if err := ping(); err == nil {
		t.Fatal("the server still answers API requests without a JetStream quorum")
	}
	if _, body := get("/metrics"); !strings.Contains(body, "trellis_jetstream_quorum 0") {
		t.Fatalf("metrics:\n%s", body)
	}
	c.Restart(1)
	c.Restart(2)
	waitUntil(t, "healthz 200 again", func() bool { code, _ := get("/healthz"); return code == 200 })
	waitUntil(t, "the API again", func() bool { return ping() == nil })
	if _, body := get("/metrics"); !strings.Contains(body, "trellis_jetstream_quorum 1") {
		t.Fatalf("metrics:\n%s", body)
	}
}
