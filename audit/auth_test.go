package audit_test

import (
	"context"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers"
)

// The token stream is part of the log: verify checks its chains like the
// others' (a server with auth on verifies clean), and an audit query of
// it is for admins only (its events hold the tokens' hashes, which
// token list keeps from readers).
func TestAuditOfTheTokenStream(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := context.Background()
	tokens := auth.NewTokens(b.Store)
	for _, name := range []string{"ops", "fleet"} {
		if _, _, err := tokens.Create(ctx, auth.CreateRequest{Name: name, Role: "worker"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := tokens.Revoke(ctx, auth.RevokeRequest{Name: "fleet"}); err != nil {
		t.Fatal(err)
	}
	fs, rep := verify(t, b.Store, audit.VerifyOptions{})
	if !rep.OK || len(fs) != 0 {
		t.Fatalf("verify with tokens: ok=%v findings %+v", rep.OK, fs)
	}
	svc := handlers.NewService(b.Store, handlers.ServiceConfig{})
	q := trellis.AuditQuery{Stream: "auth"}
	reader := auth.WithIdentity(ctx, auth.Identity{Name: "r", Role: auth.RoleReader})
	if _, err := svc.AuditQuery(reader, q); trellis.ErrorCode(err) != trellis.CodeUnauthorized {
		t.Fatalf("a reader's audit of the token stream: %v; want unauthorized", err)
	}
	admin := auth.WithIdentity(ctx, auth.Identity{Name: "a", Role: auth.RoleAdmin})
	page, err := svc.AuditQuery(admin, q)
	if err != nil || len(page.Events) != 3 || page.Events[0].Stream != events.StreamAuth {
		t.Fatalf("an admin's audit of the token stream: %+v, %v", page, err)
	}
}
