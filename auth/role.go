package auth

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// Role is what a token may do. Each role may do everything the roles
// below it may.
type Role string

// The roles, from least to most.
const (
	// RoleReader reads: list, show, audit, export, query, search, frontier,
	// facts.
	RoleReader Role = "reader"
	// RoleWorker also claims, heartbeats, finishes and fails queue tasks
	// (only on its queues when it has any), claims and writes VINE tasks
	// and records observations.
	RoleWorker Role = "worker"
	// RoleAdmin may do everything, including replay, pause/resume, limits,
	// retry and token management.
	RoleAdmin Role = "admin"
)

// Roles lists the roles from least to most.
func Roles() []Role { return []Role{RoleReader, RoleWorker, RoleAdmin} }

// ParseRole checks a role name.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if !slices.Contains(Roles(), r) {
		return "", trellis.FieldError("role", "%q is not a role: use admin, worker or reader", s)
	}
	return r, nil
}

// rank orders the roles.
func (r Role) rank() int { return slices.Index(Roles(), r) }

// Covers reports whether r may do what need may.
func (r Role) Covers(need Role) bool { return r.rank() >= 0 && r.rank() >= need.rank() }

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidateName checks a token name: 1-64 characters of A-Z a-z 0-9 _ -.
// The name is the actor of every event its holder causes, a NATS subject
// token and part of its holder's inbox prefix.
func ValidateName(name string) error {
	if !nameRE.MatchString(name) {
		return trellis.FieldError("name", "%q is not a token name: use 1-64 characters of A-Z a-z 0-9 _ -", name)
	}
	return nil
}

// Identity is who an authenticated caller is.
type Identity struct {
	// Name is the token's name: the actor of the events the caller causes.
	Name string `json:"name"`
	// Role is what the caller may do.
	Role Role `json:"role"`
	// Queues, when not empty, are the only queues a worker may work.
	Queues []string `json:"queues,omitempty"`
}

// MayWork reports whether the identity may claim and finish tasks of
// queue.
func (id Identity) MayWork(queue string) bool {
	return id.Role == RoleAdmin || len(id.Queues) == 0 || slices.Contains(id.Queues, queue)
}

// String renders the identity for messages: `token "ci" (worker)`.
func (id Identity) String() string {
	return fmt.Sprintf("token %q (%s)", id.Name, id.Role)
}

// identityKey is the context key of the caller's identity.
type identityKey struct{}

// WithIdentity returns a context carrying the caller's identity; the
// events the call causes are recorded with its name as their actor (see
// events.WithActor).
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return events.WithActor(context.WithValue(ctx, identityKey{}, id), id.Name)
}

// FromContext returns the caller's identity, if the call was
// authenticated.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// Encode renders an identity for an internal header ("name|role|q1,q2"):
// the MCP handler passes it to its tools this way.
func (id Identity) Encode() string {
	return id.Name + "|" + string(id.Role) + "|" + strings.Join(id.Queues, ",")
}

// DecodeIdentity parses Encode's output.
func DecodeIdentity(s string) (Identity, bool) {
	parts := strings.Split(s, "|")
	if len(parts) != 3 || ValidateName(parts[0]) != nil {
		return Identity{}, false
	}
	role, err := ParseRole(parts[1])
	if err != nil {
		return Identity{}, false
	}
	id := Identity{Name: parts[0], Role: role}
	if parts[2] != "" {
		id.Queues = strings.Split(parts[2], ",")
	}
	return id, true
}
