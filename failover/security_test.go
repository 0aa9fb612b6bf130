package failover_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/failover"
)

const (
	testPassword = "s3cret-pass-9f2"
	testToken    = "t0ken-secret-7c1"
)

// startAuthServer runs a JetStream server with users: alice may do
// anything; watcher may not subscribe to JetStream's advisories (as a
// Trellis user denied the leader-election advisories); nostream may not
// ask for the stream "probed"'s information. It returns the host:port.
func startAuthServer(t *testing.T) string {
	t.Helper()
	deny := func(pub, sub string) *natsserver.Permissions {
		p := &natsserver.Permissions{}
		if pub != "" {
			p.Publish = &natsserver.SubjectPermission{Allow: []string{">"}, Deny: []string{pub}}
		}
		if sub != "" {
			p.Subscribe = &natsserver.SubjectPermission{Allow: []string{">"}, Deny: []string{sub}}
		}
		return p
	}
	ns, err := natsserver.NewServer(&natsserver.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		Users: []*natsserver.User{
			{Username: "alice", Password: testPassword},
			{Username: "watcher", Password: testPassword, Permissions: deny("", "$JS.EVENT.ADVISORY.>")},
			{Username: "nostream", Password: testPassword, Permissions: deny("$JS.API.STREAM.INFO.probed", "")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(30 * time.Second) {
		t.Fatal("the NATS server did not start")
	}
	return ns.Addr().String()
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSearchLogsNoCredentials: the servers a Mover knows carry the
// configured user information (a password, a token). A search whose
// scouts fail logs each server it asked, at debug level: none of those
// lines may show a secret.
func TestSearchLogsNoCredentials(t *testing.T) {
	t.Parallel()
	addr := startAuthServer(t)
	dead1, dead2 := eventstest.FreePort(t), eventstest.FreePort(t)
	urls := fmt.Sprintf("nats://alice:%s@%s,nats://alice:%s@127.0.0.1:%d,nats://%s@127.0.0.1:%d",
		testPassword, addr, testPassword, dead1, testToken, dead2)
	nc, err := nats.Connect(urls, nats.DontRandomize())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var out syncBuffer
	logger := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m := failover.New(nc, failover.Config{Probe: failover.JetStream, After: 1, Timeout: time.Second, FirstGap: time.Hour, Logger: logger})
	m.Observe(context.Background(), errors.New("JetStream does not answer"))
	if m.Searches != 1 || m.Moves != 0 {
		t.Fatalf("%d searches, %d moves; want 1 and 0", m.Searches, m.Moves)
	}
	logged := out.String()
	if strings.Count(logged, "does not answer either") < 2 {
		t.Fatalf("the search did not log the two servers it asked:\n%s", logged)
	}
	for _, secret := range []string{testPassword, testToken} {
		if strings.Contains(logged, secret) {
			t.Fatalf("the log shows a secret:\n%s", logged)
		}
	}
}

// TestStreamProbeSurvivesAnUnrelatedPermissionError: a user denied
// JetStream's advisories (which Trellis tolerates) has that permissions
// violation as its connection's last error for good. The stream probe
// must go on asking for the stream's information: asking JetStream's
// account information alone misses a cut-off node that leads the meta
// group. A user refused the stream's information itself is asked it no
// more.
func TestStreamProbeSurvivesAnUnrelatedPermissionError(t *testing.T) {
	t.Parallel()
	addr := startAuthServer(t)
	connect := func(user string) *nats.Conn {
		nc, err := nats.Connect(fmt.Sprintf("nats://%s:%s@%s", user, testPassword, addr))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	// Every request for the stream's information, seen by another user.
	monitor := connect("alice")
	asked, err := monitor.SubscribeSync("$JS.API.STREAM.INFO.probed")
	if err != nil {
		t.Fatal(err)
	}
	if err := monitor.Flush(); err != nil {
		t.Fatal(err)
	}
	nc := connect("watcher")
	if _, err := nc.SubscribeSync("$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.probed"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the advisories' refusal as the connection's last error", func() bool {
		_ = nc.Flush()
		last := nc.LastError()
		return last != nil && strings.Contains(strings.ToLower(last.Error()), "permissions violation")
	})
	probe := failover.Stream("probed", failover.StaleReplica)
	ctx := context.Background()
	for i := range 3 {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := probe(pctx, nc)
		cancel()
		if err != nil {
			t.Fatalf("probe %d: %v", i+1, err)
		}
		if _, err := asked.NextMsg(10 * time.Second); err != nil {
			t.Fatalf("probe %d did not ask for the stream's information (%v); last error %v", i+1, err, nc.LastError())
		}
	}

	// Refused the stream's information: the probe stops asking it and
	// answers from the account's information.
	denied := connect("nostream")
	probe2 := failover.Stream("probed", failover.StaleReplica)
	waitFor(t, "the probe of a user refused the stream's information to answer", func() bool {
		// Until the refusal (asynchronous) is seen, the request times out.
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return probe2(pctx, denied) == nil
	})
	if last := denied.LastError(); last == nil || !strings.Contains(last.Error(), "STREAM.INFO") {
		t.Fatalf("the connection's last error is %v, want the stream information's refusal", last)
	}
}
