package natsapi

import (
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/auth"
)

// InboxPrefix starts every reply subject the API answers on: NATS's
// default inbox prefix, which every token's own prefix (auth.InboxPrefix)
// extends.
const InboxPrefix = "_INBOX."

// replyRefusal says why the API does not answer m, or "" when it does.
//
// NATS does not check the reply subject a caller names, and the server
// answers from its own unrestricted connection: an answer sent to
// trellis.queue.<...>.completed would be stored on that task's subject,
// one sent to $JS.API.> would be a JetStream request. So the API answers
// only on an inbox: under InboxPrefix, and, when the request carries a
// token, under that token's own inbox prefix (the only subjects its
// holder may subscribe to on the embedded server). A request it will not
// answer is not run either.
func replyRefusal(m *nats.Msg) string {
	r := m.Reply
	switch {
	case r == "":
		return "no reply subject"
	case !strings.HasPrefix(r, InboxPrefix):
		return "the reply subject is not an inbox (" + InboxPrefix + "...)"
	case strings.ContainsAny(r, "*> \t\r\n"):
		return "the reply subject holds a wildcard or a space"
	}
	if m.Header != nil {
		if tok := auth.BearerToken(m.Header.Get(HeaderAuthorization)); tok != "" && !strings.HasPrefix(r, auth.InboxPrefix(tok)+".") {
			return "the reply subject is not under the token's own inbox prefix"
		}
	}
	return ""
}
