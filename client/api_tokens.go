package client

import (
	"context"

	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/handlers/natsapi"
)

// CreateToken asks the server for a new token (admin only).
func (c *API) CreateToken(ctx context.Context, name, role string, queues []string) (*auth.Created, error) {
	return callInto[auth.Created](ctx, c, natsapi.OpTokenCreate, natsapi.TokenCreateRequest{Name: name, Role: role, Queues: queues})
}

// ListTokens lists every token (admin only; never a secret).
func (c *API) ListTokens(ctx context.Context) ([]auth.Token, error) {
	out, err := callInto[[]auth.Token](ctx, c, natsapi.OpTokenList, struct{}{})
	if err != nil {
		return nil, err
	}
	return *out, nil
}

// RevokeToken revokes a token (admin only).
func (c *API) RevokeToken(ctx context.Context, name, reason string) (*auth.Token, error) {
	return callInto[auth.Token](ctx, c, natsapi.OpTokenRevoke, natsapi.TokenNameRequest{Name: name, Reason: reason})
}

// Whoami returns the identity the server sees (nil when authentication is
// off).
func (c *API) Whoami(ctx context.Context) (*auth.Identity, error) {
	var out *auth.Identity
	if err := c.call(ctx, natsapi.OpWhoami, struct{}{}, &out); err != nil {
		return nil, err
	}
	return out, nil
}
