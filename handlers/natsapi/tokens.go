package natsapi

import (
	"context"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
)

// tokenOps are the token operations (admin only, see auth.Required) and
// who-am-I (any role).
func tokenOps(tokens *auth.Service) map[string]func(context.Context, []byte) (any, error) {
	off := func() error {
		return trellis.Errorf(trellis.CodeUnavailable, "authentication is off on this server: start it with `trellis serve --auth` to manage tokens")
	}
	return map[string]func(context.Context, []byte) (any, error){
		OpTokenCreate: handler(func(ctx context.Context, r TokenCreateRequest) (*auth.Created, error) {
			if tokens == nil {
				return nil, off()
			}
			return tokens.Create(ctx, auth.CreateRequest{Name: r.Name, Role: r.Role, Queues: r.Queues})
		}),
		OpTokenList: handler(func(ctx context.Context, _ struct{}) ([]auth.Token, error) {
			if tokens == nil {
				return nil, off()
			}
			return tokens.List(ctx)
		}),
		OpTokenRevoke: handler(func(ctx context.Context, r TokenNameRequest) (*auth.Token, error) {
			if tokens == nil {
				return nil, off()
			}
			return tokens.Revoke(ctx, auth.RevokeRequest{Name: r.Name, Reason: r.Reason})
		}),
		OpWhoami: handler(func(ctx context.Context, _ struct{}) (*auth.Identity, error) {
			id, ok := auth.FromContext(ctx)
			if !ok {
				return nil, nil
			}
			return &id, nil
		}),
	}
}
