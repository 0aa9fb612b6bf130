package auth

import (
	"context"
	"errors"
	"sync"
)

// Revocable is a Verifier that can end the calls a token is making when
// it stops working: a revoked token's long-running requests (a live feed,
// an MCP stream, a waiting claim) end with the revoke instead of running
// on until the client leaves.
type Revocable interface {
	Verifier
	// WhileValid returns ctx, cancelled with ErrRevoked when the token
	// named name stops working (revoked, or replaced by a new token of
	// that name). The caller calls stop when the call ends.
	WhileValid(ctx context.Context, name string) (context.Context, context.CancelFunc)
}

// ErrRevoked is the cause of a call ended because its token stopped
// working.
var ErrRevoked = errors.New("the token was revoked")

// calls are the running calls of each token, ended when it stops working.
type calls struct {
	mu   sync.Mutex
	next uint64
	by   map[string]map[uint64]context.CancelCauseFunc
}

// add registers a call of name and returns its context and release.
func (c *calls) add(ctx context.Context, name string) (context.Context, uint64, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	c.mu.Lock()
	if c.by == nil {
		c.by = map[string]map[uint64]context.CancelCauseFunc{}
	}
	c.next++
	id := c.next
	if c.by[name] == nil {
		c.by[name] = map[uint64]context.CancelCauseFunc{}
	}
	c.by[name][id] = cancel
	c.mu.Unlock()
	return ctx, id, func() {
		c.mu.Lock()
		delete(c.by[name], id)
		if len(c.by[name]) == 0 {
			delete(c.by, name)
		}
		c.mu.Unlock()
		cancel(nil)
	}
}

// end cancels every call of name.
func (c *calls) end(name string) {
	c.mu.Lock()
	ends := c.by[name]
	delete(c.by, name)
	c.mu.Unlock()
	for _, cancel := range ends {
		cancel(ErrRevoked)
	}
}

// WhileValid implements Revocable.
func (r *Registry) WhileValid(ctx context.Context, name string) (context.Context, context.CancelFunc) {
	ctx, _, stop := r.calls.add(ctx, name)
	// A revoke applied before the call was registered would have missed
	// it: look once more now that it is.
	if t, ok := r.Lookup(name); !ok || !t.Active() {
		r.calls.end(name)
	}
	return ctx, stop
}

// WhileValid implements Revocable.
func (s *Service) WhileValid(ctx context.Context, name string) (context.Context, context.CancelFunc) {
	return s.registry.WhileValid(ctx, name)
}
