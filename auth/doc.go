// Package auth is Trellis's access control: named tokens with a role
// (reader, worker, admin) and optionally the queues a worker may work,
// stored as events on their own stream (the log stays the truth), a
// registry every server folds from that stream to check a presented
// token, the policy saying which role may do which operation, and the
// embedded NATS server's authentication.
//
// A token is 256 random bits; only its SHA-256 is recorded. Because a
// token is high-entropy (unlike a password), a fast hash is enough: the
// hash does not let anyone who reads the log present the token, and there
// is nothing to guess by brute force. No server secret is needed, so every
// server of a cluster checks tokens from the log alone.
//
// What it decides: whether a presented token is valid (created and not
// revoked) and whether its role and queues cover an operation. The events it
// appends, on TRELLIS_AUTH: token_created and token_revoked.
package auth
