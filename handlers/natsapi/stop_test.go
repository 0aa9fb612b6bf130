package natsapi_test

import (
	"fmt"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers/natsapi"
)

// TestStopWhileReconnectingLeavesNoGhost reproduces the chaos harness's
// power-loss-all defect: serve's quorum watch stops its responder while
// the connection to its NATS node is down (the node lost power), the node
// comes back within seconds, and serve joins the API again. Stop used to
// Drain, which while the connection reconnects sends no UNSUB and keeps
// the subscription until a flush answers — and the reconnect sends every
// kept subscription to the server again. The server was left with a
// second, dead member of the API's queue group per operation: the client
// library had forgotten it and dropped what the server sent it, so about
// half the requests (audit.query among them) were never answered, until
// the next disconnect.
func TestStopWhileReconnectingLeavesNoGhost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	port := eventstest.FreePort(t)
	start := func() *natsserver.Server {
		s, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: port, NoSigs: true, NoLog: true})
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		if !s.ReadyForConnections(30 * time.Second) {
			t.Fatal("nats-server not ready")
		}
		return s
	}
	srv := start()
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	cfg := natsapi.ServeConfig{Info: natsapi.PingInfo{Version: "test"}}
	base := nc.NumSubscriptions()
	r, err := natsapi.Serve(nc, b.svc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	perResponder := nc.NumSubscriptions() - base
	// The node goes away; the responder is stopped while the connection
	// reconnects, and the node comes back.
	srv.Shutdown()
	srv.WaitForShutdown()
	waitUntil(t, "the connection notices the node is gone", func() bool { return !nc.IsConnected() })
	r.Stop()
	srv = start()
	t.Cleanup(srv.Shutdown)
	waitUntil(t, "the connection reconnects", nc.IsConnected)
	r, err = natsapi.Serve(nc, b.svc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	subject := natsapi.Prefix + natsapi.OpPing
	// A drain in progress finishes with the flush that follows the
	// reconnect; what the server holds once it has is what stays.
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the stopped responder's subscriptions are gone from the client", func() bool { return nc.NumSubscriptions() == base+perResponder })
	subs := natsapiOps(t, srv, subject)
	if len(subs) != 1 {
		t.Errorf("the server holds %d subscriptions of %s for one responder: %v", len(subs), subject, subs)
	}
	client, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	unanswered := 0
	for range 16 {
		if _, err := client.Request(subject, []byte("{}"), 5*time.Second); err != nil {
			unanswered++
		}
	}
	if unanswered > 0 {
		t.Errorf("%d of 16 pings unanswered after the responder rejoined", unanswered)
	}
}

// natsapiOps lists the subscriptions srv holds on subject (their sids).
func natsapiOps(t *testing.T, srv *natsserver.Server, subject string) []string {
	t.Helper()
	sz, err := srv.Subsz(&natsserver.SubszOptions{Subscriptions: true, Test: subject})
	if err != nil {
		t.Fatal(err)
	}
	var sids []string
	for _, s := range sz.Subs {
		sids = append(sids, s.Sid)
	}
	return sids
}

// waitUntil polls cond for up to a minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
