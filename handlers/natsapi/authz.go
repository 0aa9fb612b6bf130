package natsapi

import (
	"context"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
)

// authorize authenticates a request's token (its Authorization header)
// and checks that the caller may perform op. With v nil (authentication
// off) every request is let in as it is.
func authorize(ctx context.Context, v auth.Verifier, m *nats.Msg, op string) (context.Context, error) {
	if v == nil {
		return ctx, nil
	}
	var header string
	if m.Header != nil {
		header = m.Header.Get(HeaderAuthorization)
	}
	ctx, err := auth.Authenticate(ctx, v, auth.BearerToken(header))
	if err != nil {
		return ctx, err
	}
	return ctx, auth.Allow(ctx, op)
}

// decode decodes a request strictly and makes it act as the caller (see
// auth.Bind).
func decode(ctx context.Context, data []byte, v any) error {
	if err := trellis.DecodeRequest(data, v); err != nil {
		return err
	}
	return auth.Bind(ctx, v)
}
