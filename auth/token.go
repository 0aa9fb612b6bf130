package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/trellis/trellis/events"
)

// Token event types, on subjects trellis.auth.<name>.<type>.
const (
	// TokenCreated records a new token: its role, queues and hash.
	TokenCreated = "token_created"
	// TokenRevoked records that a token no longer works.
	TokenRevoked = "token_revoked"
)

// Schema is the payload schema version of the token events.
const Schema = 1

// TokenCreatedPayload is the payload of token_created. It holds the
// token's SHA-256, never the token.
type TokenCreatedPayload struct {
	Role   Role     `json:"role"`
	Queues []string `json:"queues,omitempty"`
	// Hash is the hex SHA-256 of the token.
	Hash string `json:"hash"`
}

// TokenRevokedPayload is the payload of token_revoked.
type TokenRevokedPayload struct {
	Reason string `json:"reason,omitempty"`
}

// Subject is the subject of a token event.
func Subject(name, typ string) string { return "trellis.auth." + name + "." + typ }

// Filter is the subject filter of one token's events.
func Filter(name string) string { return "trellis.auth." + name + ".>" }

// Token is a token as its events leave it (no secret: the hash).
type Token struct {
	Name      string     `json:"name"`
	Role      Role       `json:"role"`
	Queues    []string   `json:"queues,omitempty"`
	Hash      string     `json:"-"`
	CreatedAt time.Time  `json:"created_at"`
	CreatedBy string     `json:"created_by,omitempty"`
	Revoked   bool       `json:"revoked"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	RevokedBy string     `json:"revoked_by,omitempty"`
}

// Active reports whether the token exists and is not revoked.
func (t *Token) Active() bool { return t != nil && !t.Revoked }

// Identity is who a holder of the token is.
func (t *Token) Identity() Identity {
	return Identity{Name: t.Name, Role: t.Role, Queues: slices.Clone(t.Queues)}
}

// clone copies a token state.
func clone(t *Token) *Token {
	if t == nil {
		return nil
	}
	c := *t
	c.Queues = slices.Clone(t.Queues)
	return &c
}

// Fold applies one token event. A created event on a revoked token starts
// it over (a name may be reused after a revoke); events that mean nothing
// (a revoke of no token, an undecodable payload) wrap events.ErrBadEvent.
func Fold(t *Token, rec events.Recorded) (*Token, error) {
	switch rec.Type {
	case TokenCreated:
		var p TokenCreatedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return t, err
		}
		if _, err := ParseRole(string(p.Role)); err != nil || len(p.Hash) != sha256.Size*2 || ValidateName(rec.AggregateID) != nil {
			return t, fmt.Errorf("token event #%d: %w: bad role, hash or name", rec.Seq, events.ErrBadEvent)
		}
		return &Token{Name: rec.AggregateID, Role: p.Role, Queues: p.Queues, Hash: p.Hash, CreatedAt: rec.Time, CreatedBy: rec.Actor}, nil
	case TokenRevoked:
		if t == nil {
			return t, fmt.Errorf("token event #%d revokes no token: %w", rec.Seq, events.ErrBadEvent)
		}
		at := rec.Time
		t.Revoked, t.RevokedAt, t.RevokedBy = true, &at, rec.Actor
		return t, nil
	}
	return t, fmt.Errorf("token event #%d has unknown type %q: %w", rec.Seq, rec.Type, events.ErrBadEvent)
}

// tokenPrefix starts every token, so one is recognisable in a file or a
// leaked log line.
const tokenPrefix = "trellis_"

// NewSecret returns a new token: "trellis_" and 256 random bits in
// base64url.
func NewSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Hash is the hex SHA-256 of a token: what the log records.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// InboxPrefix is the NATS inbox prefix of a token's holder: replies to
// its requests arrive under it, and the embedded server lets only that
// holder subscribe there. It derives from the token's hash, so client and
// server agree on it without a lookup.
func InboxPrefix(secret string) string { return "_INBOX.t" + Hash(secret)[:32] }
