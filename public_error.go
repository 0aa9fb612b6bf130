package trellis

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
)

// PublicError is what a caller of any transport (HTTP, MCP, NATS) is told
// of err: its code, field and message, except for an internal error, whose
// text may hold paths, subjects or a driver's detail. That one is logged
// on log with a fresh reference id and attrs, and the caller sees only a
// generic message carrying the reference, to quote to whoever reads the
// server's log. Every transport answers errors through this one policy.
func PublicError(log *slog.Logger, err error, attrs ...any) *Error {
	te := AsError(err)
	if te == nil {
		return nil
	}
	if te.Code != CodeInternal {
		return &Error{Code: te.Code, Field: te.Field, Message: te.Message}
	}
	ref := newErrorRef()
	if log == nil {
		log = slog.Default()
	}
	log.Error("internal error", append(attrs, "ref", ref, "err", err)...)
	return &Error{Code: CodeInternal, Message: InternalMessage(ref)}
}

// InternalMessage is the message a caller gets for an internal error
// logged under ref.
func InternalMessage(ref string) string {
	return fmt.Sprintf("internal error (ref %s); the server log has the details", ref)
}

// newErrorRef returns a random reference id for a logged error.
func newErrorRef() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}
