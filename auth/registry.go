package auth

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// Registry is the tokens as the log says they are: an in-memory
// projection of the token stream, folded by a projections.Runner, that
// checks presented tokens. Every server keeps one; a revoke reaches it as
// soon as the event is delivered (milliseconds), so a revoked token stops
// working on every listener without a restart.
type Registry struct {
	mu     sync.RWMutex
	byName map[string]*Token
	byHash map[string]string // hash -> name, active tokens only

	hookMu    sync.Mutex
	onRevoked []func(name string)

	calls calls // the running calls of each token (see WhileValid)
}

// NewRegistry returns an empty registry; run it with a projections.Runner.
func NewRegistry() *Registry {
	return &Registry{byName: map[string]*Token{}, byHash: map[string]string{}}
}

// OnRevoked registers fn to be called (outside the registry's lock) with
// the name of every token that stops working: revoked, or replaced by a
// new token of the same name. The embedded NATS server's authentication
// uses it to disconnect the holder's connections.
func (r *Registry) OnRevoked(fn func(name string)) {
	r.hookMu.Lock()
	r.onRevoked = append(r.onRevoked, fn)
	r.hookMu.Unlock()
}

// Name implements projections.Projection.
func (r *Registry) Name() string { return "tokens" }

// Stream implements projections.Projection.
func (r *Registry) Stream() string { return events.StreamAuth }

// Load implements projections.Projection: the registry is rebuilt from the
// (small) token stream on every start.
func (r *Registry) Load() (uint64, error) { return 0, nil }

// Save implements projections.Projection (nothing to save).
func (r *Registry) Save(uint64) error { return nil }

// Reset implements projections.Projection.
func (r *Registry) Reset() error {
	r.mu.Lock()
	r.byName, r.byHash = map[string]*Token{}, map[string]string{}
	r.mu.Unlock()
	return nil
}

// Apply implements projections.Projection.
func (r *Registry) Apply(rec events.Recorded) error {
	name := rec.AggregateID
	if ValidateName(name) != nil || !strings.HasPrefix(rec.Subject, "trellis.auth."+name+".") {
		return errors.Join(events.ErrBadEvent, trellis.Errorf(trellis.CodeInvalid, "token event #%d names no token", rec.Seq))
	}
	r.mu.Lock()
	old := clone(r.byName[name])
	next, err := Fold(clone(old), rec)
	if err != nil {
		r.mu.Unlock()
		return err
	}
	if old.Active() {
		delete(r.byHash, old.Hash)
	}
	r.byName[name] = next
	if next.Active() {
		r.byHash[next.Hash] = name
	}
	r.mu.Unlock()
	if old.Active() && (!next.Active() || next.Hash != old.Hash) {
		r.hookMu.Lock()
		hooks := slices.Clone(r.onRevoked)
		r.hookMu.Unlock()
		for _, fn := range hooks {
			fn(name)
		}
		r.calls.end(name)
	}
	return nil
}

// ErrNoToken is the cause of a call that presented no token.
var ErrNoToken = errors.New("no token")

// Verify returns the identity of a token's holder, or an unauthorized
// error when the token is empty, unknown or revoked. Tokens are looked up
// by their SHA-256: the registry holds no token.
func (r *Registry) Verify(secret string) (Identity, error) {
	if secret == "" {
		return Identity{}, &trellis.Error{Code: trellis.CodeUnauthorized, Err: ErrNoToken,
			Message: "authentication required: present a token (--token or TRELLIS_TOKEN; HTTP: Authorization: Bearer <token>)"}
	}
	h := Hash(secret)
	r.mu.RLock()
	defer r.mu.RUnlock()
	name, ok := r.byHash[h]
	if !ok {
		return Identity{}, trellis.Errorf(trellis.CodeUnauthorized, "the token is unknown or revoked")
	}
	return r.byName[name].Identity(), nil
}

// List returns every token the log knows, active and revoked, by name.
func (r *Registry) List() []Token {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Token, 0, len(r.byName))
	for _, t := range r.byName {
		out = append(out, *clone(t))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the token named name as the registry knows it.
func (r *Registry) Lookup(name string) (Token, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.byName[name]
	if !ok {
		return Token{}, false
	}
	return *clone(t), true
}

// Verifier checks presented tokens (a Registry, or a Service).
type Verifier interface {
	Verify(secret string) (Identity, error)
}

// BearerToken returns the token of an "Authorization: Bearer <token>"
// header value ("" when it is not one).
func BearerToken(header string) string {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// Authenticate verifies a presented token and returns ctx carrying its
// identity. With v nil (authentication off) ctx is returned as it is.
func Authenticate(ctx context.Context, v Verifier, secret string) (context.Context, error) {
	if v == nil {
		return ctx, nil
	}
	id, err := v.Verify(secret)
	if err != nil {
		return ctx, err
	}
	return WithIdentity(ctx, id), nil
}
