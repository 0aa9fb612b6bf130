package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/handlers/natsapi"
)

// TestAPIAnswersAfterWholeClusterOutage reproduces the chaos harness's
// power-loss-all defect the way it happened: every node of the cluster
// goes down at once, the serve's quorum watch leaves the API while its
// connection reconnects, the nodes come back within seconds and the
// serve joins the API again. Every API request must then be answered:
// the responder used to drain its subscriptions while reconnecting, the
// reconnect subscribed them again on the server, and they stayed there as
// dead members of the API's queue group that swallowed about half the
// requests (see TestStopWhileReconnectingLeavesNoGhost in
// handlers/natsapi). Without the fix 10 of the 16 pings went unanswered.
func TestAPIAnswersAfterWholeClusterOutage(t *testing.T) {
	t.Parallel()
	c, srv, _ := servedCluster(t)
	get := func(path string) (int, string) { return httpGet(srv, path) }
	healthz := func() int { code, _ := get("/healthz"); return code }
	for i := 0; i < 3; i++ {
		c.Stop(i)
	}
	waitUntil(t, "the serve to leave the API", func() bool {
		_, body := get("/metrics")
		return strings.Contains(body, "trellis_jetstream_quorum 0")
	})
	left := time.Now()
	for i := 0; i < 3; i++ {
		c.Restart(i)
	}
	t.Logf("nodes back %s after the serve left the API", time.Since(left).Round(time.Millisecond))
	waitUntil(t, "the serve to join the API again (healthz 200)", func() bool { return healthz() == 200 })
	nc, err := nats.Connect(c.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	unanswered := 0
	for range 16 {
		if _, err := nc.Request(natsapi.Prefix+natsapi.OpPing, []byte("{}"), 5*time.Second); err != nil {
			unanswered++
		}
	}
	if unanswered > 0 {
		t.Errorf("%d of 16 API pings unanswered after the serve joined the API again", unanswered)
	}
}
