package auth_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

func start(t *testing.T) (*eventstest.Bundle, *auth.Service) {
	t.Helper()
	b := eventstest.Start(t)
	svc := auth.NewService(b.Store, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	return b, svc
}

// TestTokenLifecycle: a created token verifies with its role and queues,
// the log holds only its hash, a revoked one stops verifying, and a second
// registry folded from the same log agrees (every server sees the same
// tokens).
func TestTokenLifecycle(t *testing.T) {
	t.Parallel()
	b, svc := start(t)
	ctx := context.Background()
	c, err := svc.Create(ctx, auth.CreateRequest{Name: "ci-1", Role: "worker", Queues: []string{"builds", "builds", "docs"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.Token, "trellis_") || len(c.Token) != len("trellis_")+43 {
		t.Fatalf("token %q", c.Token)
	}
	id, err := svc.Verify(c.Token)
	if err != nil || id.Name != "ci-1" || id.Role != auth.RoleWorker || strings.Join(id.Queues, ",") != "builds,docs" {
		t.Fatalf("verify = %+v, %v", id, err)
	}
	recs, _, err := b.Store.Load(ctx, events.StreamAuth, auth.Filter("ci-1"))
	if err != nil || len(recs) != 1 {
		t.Fatalf("log = %v, %v", recs, err)
	}
	if strings.Contains(string(recs[0].Payload), c.Token) || !strings.Contains(string(recs[0].Payload), auth.Hash(c.Token)) {
		t.Fatalf("the log must hold the hash only: %s", recs[0].Payload)
	}
	if _, err := svc.Verify(c.Token + "x"); trellis.ErrorCode(err) != trellis.CodeUnauthorized {
		t.Fatalf("a wrong token verified: %v", err)
	}
	if _, err := svc.Verify(""); trellis.ErrorCode(err) != trellis.CodeUnauthorized {
		t.Fatalf("no token verified: %v", err)
	}
	if _, err := svc.Create(ctx, auth.CreateRequest{Name: "ci-1", Role: "reader"}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("a second ci-1: %v", err)
	}
	if _, err := svc.Revoke(ctx, auth.RevokeRequest{Name: "ci-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Verify(c.Token); trellis.ErrorCode(err) != trellis.CodeUnauthorized {
		t.Fatalf("a revoked token verified: %v", err)
	}
	if _, err := svc.Revoke(ctx, auth.RevokeRequest{Name: "ci-1"}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("revoke twice: %v", err)
	}
	if _, err := svc.Revoke(ctx, auth.RevokeRequest{Name: "nobody"}); trellis.ErrorCode(err) != trellis.CodeNotFound {
		t.Fatalf("revoke unknown: %v", err)
	}
	// A revoked name may be used again, with a new token.
	c2, err := svc.Create(ctx, auth.CreateRequest{Name: "ci-1", Role: "reader"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Verify(c.Token); err == nil {
		t.Fatal("the old token works again after its name was reused")
	}
	other := auth.NewService(b.Store, nil)
	if err := other.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer other.Stop()
	if id, err := other.Verify(c2.Token); err != nil || id.Role != auth.RoleReader {
		t.Fatalf("another registry: %+v, %v", id, err)
	}
	list, err := other.List(ctx)
	if err != nil || len(list) != 1 || list[0].Revoked || list[0].Name != "ci-1" {
		t.Fatalf("list = %+v, %v", list, err)
	}
}

// TestTokenBadInput: names, roles and queues are checked with the field
// named, and nothing is appended.
func TestTokenBadInput(t *testing.T) {
	t.Parallel()
	b, svc := start(t)
	ctx := context.Background()
	for _, tc := range []struct {
		req   auth.CreateRequest
		field string
	}{
		{auth.CreateRequest{Name: "", Role: "admin"}, "name"},
		{auth.CreateRequest{Name: "a.b", Role: "admin"}, "name"},
		{auth.CreateRequest{Name: "../x", Role: "admin"}, "name"},
		{auth.CreateRequest{Name: strings.Repeat("a", 65), Role: "admin"}, "name"},
		{auth.CreateRequest{Name: "x", Role: "root"}, "role"},
		{auth.CreateRequest{Name: "x", Role: ""}, "role"},
		{auth.CreateRequest{Name: "x", Role: "worker", Queues: []string{"a b"}}, "queues"},
		{auth.CreateRequest{Name: "x", Role: "reader", Queues: []string{"a"}}, "queues"},
		{auth.CreateRequest{Name: "x", Role: "admin", Secret: "short"}, "token"},
	} {
		_, err := svc.Create(ctx, tc.req)
		if te := trellis.AsError(err); te == nil || te.Code != trellis.CodeInvalid || te.Field != tc.field {
			t.Errorf("%+v: %v, want invalid %s", tc.req, err, tc.field)
		}
	}
	if seq, _ := b.Store.LastSeq(ctx, events.StreamAuth); seq != 0 {
		t.Fatalf("bad input appended %d events", seq)
	}
}

// TestConcurrentCreateOneWins: many creates of one name at once: exactly
// one token exists, the others are conflicts.
func TestConcurrentCreateOneWins(t *testing.T) {
	t.Parallel()
	b, svc := start(t)
	other := auth.NewService(b.Store, nil)
	if err := other.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer other.Stop()
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(s *auth.Service) {
			defer wg.Done()
			_, err := s.Create(context.Background(), auth.CreateRequest{Name: "race", Role: "reader"})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				wins++
			} else if trellis.ErrorCode(err) != trellis.CodeConflict {
				t.Errorf("create: %v", err)
			}
		}([]*auth.Service{svc, other}[i%2])
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d creates won", wins)
	}
}

// TestBootstrapWritesTheAdminTokenOnce: the first start creates the admin
// token in <data>/auth/admin.token with mode 0600; a second start keeps it.
func TestBootstrapWritesTheAdminTokenOnce(t *testing.T) {
	t.Parallel()
	_, svc := start(t)
	dir := t.TempDir()
	path, created, err := svc.Bootstrap(context.Background(), dir, "")
	if err != nil || !created || path != dir+"/auth/admin.token" {
		t.Fatalf("bootstrap: %s %v %v", path, created, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin.token: %v %v", fi, err)
	}
	secret, err := auth.ReadSecret(path)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := svc.Verify(secret); err != nil || id.Role != auth.RoleAdmin || id.Name != "admin" {
		t.Fatalf("admin token: %+v %v", id, err)
	}
	if _, created, err := svc.Bootstrap(context.Background(), dir, ""); err != nil || created {
		t.Fatalf("second bootstrap: %v %v", created, err)
	}
	if again, _ := auth.ReadSecret(path); again != secret {
		t.Fatal("the second start replaced the admin token")
	}
}

// TestPolicy: every role may do what the issue lists and nothing more,
// and an operation the policy does not know needs admin.
func TestPolicy(t *testing.T) {
	t.Parallel()
	cases := map[string][3]bool{ // reader, worker, admin
		"queue.list": {true, true, true}, "queue.show": {true, true, true}, "audit": {true, true, true},
		"queue.export": {true, true, true}, "code.search": {true, true, true}, "vine.next": {true, true, true},
		"memory.facts": {true, true, true}, "metrics": {true, true, true},
		"queue.next": {false, true, true}, "queue.done": {false, true, true}, "queue.fail": {false, true, true},
		"queue.heartbeat": {false, true, true}, "vine.claim": {false, true, true}, "vine.write": {false, true, true},
		"memory.observe": {false, true, true},
		"replay":         {false, false, true}, "queue.control": {false, false, true}, "queue.retry": {false, false, true},
		"token.create": {false, false, true}, "token.revoke": {false, false, true}, "token.list": {false, false, true},
		"queue.add": {false, false, true}, "something.new": {false, false, true},
	}
	for op, want := range cases {
		for i, role := range auth.Roles() {
			ctx := auth.WithIdentity(context.Background(), auth.Identity{Name: "n", Role: role})
			err := auth.Allow(ctx, op)
			if (err == nil) != want[i] {
				t.Errorf("%s %s: %v, want allowed=%v", role, op, err, want[i])
			}
			if err != nil && trellis.ErrorCode(err) != trellis.CodeUnauthorized {
				t.Errorf("%s %s: code %v", role, op, trellis.ErrorCode(err))
			}
		}
	}
	if err := auth.Allow(context.Background(), "replay"); err != nil {
		t.Fatalf("unauthenticated (auth off) refused: %v", err)
	}
}

// TestBindActsAsTheCaller: who-acts fields are filled with the token name
// or must be it (or one of its slots); queue limits hold.
func TestBindActsAsTheCaller(t *testing.T) {
	t.Parallel()
	ctx := auth.WithIdentity(context.Background(), auth.Identity{Name: "w1", Role: auth.RoleWorker, Queues: []string{"builds"}})
	next := &trellis.NextRequest{Queue: "builds"}
	if err := auth.Bind(ctx, next); err != nil || next.Worker != "w1" {
		t.Fatalf("fill: %+v %v", next, err)
	}
	slot := &trellis.NextRequest{Queue: "builds", Worker: "w1/3"}
	if err := auth.Bind(ctx, slot); err != nil || slot.Worker != "w1/3" {
		t.Fatalf("slot: %+v %v", slot, err)
	}
	for _, req := range []any{
		&trellis.NextRequest{Queue: "builds", Worker: "w2"},
		&trellis.NextRequest{Queue: "builds", Worker: "w1x"},
		&trellis.NextRequest{Queue: "other"},
		&trellis.NextRequest{},
		&trellis.DoneRequest{Worker: "w10"},
		&trellis.FailRequest{Worker: "someone"},
		&trellis.VineClaimRequest{Agent: "x"},
		&trellis.ObserveRequest{Agent: "agent_2"},
	} {
		if err := auth.Bind(ctx, req); trellis.ErrorCode(err) != trellis.CodeUnauthorized {
			t.Errorf("%+v: %v, want unauthorized", req, err)
		}
	}
	if got := events.ActorFor(ctx, "trellis"); got != "w1" {
		t.Fatalf("actor of a default = %q", got)
	}
	if got := events.ActorFor(ctx, "w1/2"); got != "w1/2" {
		t.Fatalf("actor of a slot = %q", got)
	}
}
