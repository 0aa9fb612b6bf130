package events

import (
	"context"
	"strings"
)

// actorKey is the context key of the authenticated name.
type actorKey struct{}

// WithActor returns a context whose appends are caused by the
// authenticated name: ActorFor records it as the actor of every event
// decided under it. The transports set it after they authenticate a
// caller; without it (authentication off) actors are what the commands
// say.
func WithActor(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, actorKey{}, name)
}

// ActorFrom returns the authenticated name of ctx ("" when none).
func ActorFrom(ctx context.Context) string {
	name, _ := ctx.Value(actorKey{}).(string)
	return name
}

// ActorFor returns the actor to record for an event a command decided
// with actor under ctx: actor itself when ctx carries no authenticated
// name, or when actor is that name or one of its slots ("<name>/<slot>",
// a worker pool's claimant); otherwise the authenticated name. A caller
// can thus never record an event under another name, and the defaults
// commands use ("trellis", "operator", none) become the caller's name.
func ActorFor(ctx context.Context, actor string) string {
	name := ActorFrom(ctx)
	if name == "" || ActsAs(name, actor) {
		return actor
	}
	return name
}

// ActsAs reports whether who is name or one of its slots
// ("<name>/<anything>").
func ActsAs(name, who string) bool {
	return who == name || strings.HasPrefix(who, name+"/")
}

// ActorOr returns actor, or "trellis" when a command names none.
func ActorOr(actor string) string {
	if actor == "" {
		return "trellis"
	}
	return actor
}
