package auth

import (
	"crypto/subtle"
	"sync"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
)

// APISubjects is what a token holder may publish on NATS: the Trellis API
// requests. Every other subject, the event subjects trellis.<domain>.>
// and JetStream's API ($JS.API.>) included, is refused, so only Trellis
// appends events and a token holder reads only what the API lets its role
// read.
const APISubjects = "trellis.api.v1.>"

// InternalUser is the NATS user name of Trellis's own connections.
const InternalUser = "trellis"

// NATSAuth authenticates the embedded NATS server's clients: Trellis's own
// connections with a secret made at start-up (never written anywhere),
// and everyone else with a token from the registry. A token holder may
// publish only on APISubjects and subscribe only under its own inbox
// prefix (InboxPrefix), so it can neither append events nor read the log
// or other clients' replies. When a token is revoked its connections are
// closed, and a reconnect is refused.
type NATSAuth struct {
	internal string

	// attached is closed once Attach gave the registry: until then a
	// token holder's connection waits (see Check).
	attached chan struct{}

	mu      sync.Mutex
	reg     *Registry
	srv     *natsserver.Server
	clients map[string]map[uint64]struct{} // token name -> client ids
}

// attachWait bounds how long a token holder's connection waits for the
// registry (see Check): longer than NATS clients' connect timeout (2 s by
// default).
const attachWait = 10 * time.Second

// NewNATSAuth returns an authenticator with a fresh internal secret; it
// accepts only that secret until Attach gives it the registry.
func NewNATSAuth() (*NATSAuth, error) {
	secret, err := NewSecret()
	if err != nil {
		return nil, err
	}
	return &NATSAuth{internal: secret, attached: make(chan struct{}), clients: map[string]map[uint64]struct{}{}}, nil
}

// Internal is the secret Trellis's own connections present (nats.Token).
func (a *NATSAuth) Internal() string { return a.internal }

// Attach starts accepting the registry's tokens on srv and closing the
// connections of tokens that stop working.
func (a *NATSAuth) Attach(reg *Registry, srv *natsserver.Server) {
	a.mu.Lock()
	first := a.reg == nil
	a.reg, a.srv = reg, srv
	a.mu.Unlock()
	reg.OnRevoked(a.disconnect)
	if first {
		close(a.attached)
	}
}

// Check implements server.Authentication.
func (a *NATSAuth) Check(c natsserver.ClientAuthentication) bool {
	if c.Kind() != natsserver.CLIENT {
		return false
	}
	opts := c.GetOpts()
	if opts == nil {
		return false
	}
	tok := opts.Token
	if tok == "" {
		tok = opts.Password // nats://user:<token>@host works too
	}
	if subtle.ConstantTimeCompare([]byte(tok), []byte(a.internal)) == 1 {
		c.RegisterUser(&natsserver.User{Username: InternalUser})
		return true
	}
	a.mu.Lock()
	reg := a.reg
	a.mu.Unlock()
	if reg == nil {
		// A client reconnecting to a server that is still starting (its
		// NATS listens before the registry is read) waits rather than be
		// refused: NATS clients give up reconnecting after the same
		// authorization error twice, and a worker would take that for a
		// revoked token. Its connect times out first and is tried again.
		select {
		case <-a.attached:
		case <-time.After(attachWait):
		}
		a.mu.Lock()
		reg = a.reg
		a.mu.Unlock()
		if reg == nil {
			return false
		}
	}
	id, err := reg.Verify(tok)
	if err != nil {
		return false
	}
	c.RegisterUser(&natsserver.User{
		Username: id.Name,
		Permissions: &natsserver.Permissions{
			Publish:   &natsserver.SubjectPermission{Allow: []string{APISubjects}},
			Subscribe: &natsserver.SubjectPermission{Allow: []string{InboxPrefix(tok) + ".>"}},
		},
	})
	a.mu.Lock()
	set := a.clients[id.Name]
	if set == nil {
		set = map[uint64]struct{}{}
		a.clients[id.Name] = set
	}
	a.forgetClosed(set)
	set[c.GetID()] = struct{}{}
	a.mu.Unlock()
	// A revoke that landed while this connection was being let in would
	// have missed it: check once more now that it is registered.
	if _, err := reg.Verify(tok); err != nil {
		a.mu.Lock()
		delete(a.clients[id.Name], c.GetID())
		a.mu.Unlock()
		return false
	}
	return true
}

// forgetClosed drops from set the ids of connections the server no
// longer has (closed ones), so a token's set holds its open connections
// and the one being let in, however often its holder reconnects. A
// connection is registered with the server before it is authenticated,
// so no connection being let in is dropped. a.mu is held.
func (a *NATSAuth) forgetClosed(set map[uint64]struct{}) {
	if a.srv == nil {
		return
	}
	for id := range set {
		if a.srv.GetClient(id) == nil {
			delete(set, id)
		}
	}
}

// disconnect closes every connection made with the token named name.
func (a *NATSAuth) disconnect(name string) {
	a.mu.Lock()
	ids := a.clients[name]
	delete(a.clients, name)
	srv := a.srv
	a.mu.Unlock()
	if srv == nil {
		return
	}
	for id := range ids {
		_ = srv.DisconnectClientByID(id) // gone already: nothing to do
	}
}
