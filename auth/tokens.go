package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// Created is the answer to a token creation: the only time the token
// itself is shown.
type Created struct {
	Name  string `json:"name"`
	Role  Role   `json:"role"`
	Token string `json:"token"`
	// Queues are the queues a worker token may work (none: every queue).
	Queues []string `json:"queues,omitempty"`
}

// CreateRequest asks for a new token.
type CreateRequest struct {
	Name   string   `json:"name"`
	Role   string   `json:"role"`
	Queues []string `json:"queues,omitempty"`
	// Secret, when set, is the token to record instead of a random one:
	// for a deployment whose admin token comes from a secret store
	// (`serve --auth` with TRELLIS_ADMIN_TOKEN). It must be at least 32
	// characters. The API refuses it: tokens made there are random.
	Secret string `json:"-"`
}

// RevokeRequest names the token to revoke.
type RevokeRequest struct {
	Name   string `json:"name"`
	Reason string `json:"reason,omitempty"`
}

// Tokens manages tokens: every change is a checked append on the token's
// aggregate (trellis.auth.<name>.>), decided on the command runner.
type Tokens struct {
	store  *events.Store
	runner *command.Runner[*Token]
}

// NewTokens returns the token commands on store.
func NewTokens(store *events.Store) *Tokens {
	kind := command.Kind[*Token]{
		Name:   "token",
		Stream: events.StreamAuth,
		Filter: Filter,
		Fold:   Fold,
		Clone:  clone,
		Schema: Schema,
	}
	return &Tokens{store: store, runner: command.New(store, kind, command.Config{CacheSize: -1})}
}

// Create records a new token and returns it (the only time it is shown).
// A name in use by an active token is a conflict; a revoked name may be
// used again. It returns the sequence of the created event, for a caller
// that must wait until its registry knows the token.
func (t *Tokens) Create(ctx context.Context, req CreateRequest) (*Created, uint64, error) {
	if err := ValidateName(req.Name); err != nil {
		return nil, 0, err
	}
	role, err := ParseRole(req.Role)
	if err != nil {
		return nil, 0, err
	}
	queues := slices.Clone(req.Queues)
	for i, q := range queues {
		q = strings.TrimSpace(q)
		if err := trellis.ValidateQueueName(q); err != nil {
			return nil, 0, trellis.FieldError("queues", "%v", trellis.AsError(err).Message)
		}
		queues[i] = q
	}
	slices.Sort(queues)
	queues = slices.Compact(queues)
	if len(queues) > 0 && role != RoleWorker {
		return nil, 0, trellis.FieldError("queues", "only worker tokens are limited to queues; a %s token reads or manages every queue", role)
	}
	secret := req.Secret
	if secret == "" {
		if secret, err = NewSecret(); err != nil {
			return nil, 0, trellis.Errorf(trellis.CodeInternal, "%w", err)
		}
	} else if len(secret) < 32 || strings.ContainsAny(secret, " \t\r\n") {
		return nil, 0, trellis.FieldError("token", "a chosen token must be at least 32 characters without spaces")
	}
	st, err := t.runner.Load(ctx, req.Name)
	if err != nil {
		return nil, 0, storeError("load token "+req.Name, err)
	}
	st, err = t.runner.Run(ctx, st, "trellis", func(cur *Token) (command.Decision, error) {
		if cur.Active() {
			return command.Decision{}, trellis.Errorf(trellis.CodeConflict, "a token named %q exists: revoke it first or pick another name", req.Name)
		}
		return command.Decision{Subject: Subject(req.Name, TokenCreated), Type: TokenCreated,
			Payload: TokenCreatedPayload{Role: role, Queues: queues, Hash: Hash(secret)}}, nil
	})
	if err != nil {
		return nil, 0, storeError("create token "+req.Name, err)
	}
	return &Created{Name: req.Name, Role: role, Token: secret, Queues: queues}, st.Seq, nil
}

// Revoke records that a token no longer works. Revoking an unknown token
// is not_found; revoking a revoked one is a conflict.
func (t *Tokens) Revoke(ctx context.Context, req RevokeRequest) (*Token, uint64, error) {
	if err := ValidateName(req.Name); err != nil {
		return nil, 0, err
	}
	if len(req.Reason) > trellis.MaxTextBytes {
		return nil, 0, trellis.FieldError("reason", "is %d bytes; at most %d allowed", len(req.Reason), trellis.MaxTextBytes)
	}
	st, err := t.runner.Load(ctx, req.Name)
	if err != nil {
		return nil, 0, storeError("load token "+req.Name, err)
	}
	st, err = t.runner.Run(ctx, st, "trellis", func(cur *Token) (command.Decision, error) {
		switch {
		case cur == nil:
			return command.Decision{}, trellis.Errorf(trellis.CodeNotFound, "no token named %q", req.Name)
		case cur.Revoked:
			return command.Decision{}, trellis.Errorf(trellis.CodeConflict, "token %q is already revoked", req.Name)
		}
		return command.Decision{Subject: Subject(req.Name, TokenRevoked), Type: TokenRevoked, Payload: TokenRevokedPayload{Reason: req.Reason}}, nil
	})
	if err != nil {
		return nil, 0, storeError("revoke token "+req.Name, err)
	}
	return st.Value, st.Seq, nil
}

// Get returns a token's state from the log (nil when none).
func (t *Tokens) Get(ctx context.Context, name string) (*Token, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	st, err := t.runner.Load(ctx, name)
	if err != nil {
		return nil, storeError("load token "+name, err)
	}
	return st.Value, nil
}

// storeError keeps a coded error and reports the rest as unavailable
// (the store could not answer) or internal.
func storeError(what string, err error) error {
	var te *trellis.Error
	if errors.As(err, &te) {
		return err
	}
	if errors.Is(err, command.ErrConflict) {
		return trellis.Errorf(trellis.CodeConflict, "%s: %w", what, err)
	}
	if events.IsUnavailable(err) {
		return &trellis.Error{Code: trellis.CodeUnavailable, Message: fmt.Sprintf("%s: %v", what, err), Err: err}
	}
	return trellis.Errorf(trellis.CodeInternal, "%s: %w", what, err)
}
