// Package eventstest starts a real embedded nats-server with JetStream for
// tests (no mocks of NATS) and returns a ready Store.
package eventstest
