// Package eventstest starts a real embedded nats-server with JetStream for
// tests (no mocks of NATS) and returns a ready Store.
//
// It decides nothing and appends no events: the tests that use it do,
// through the Store.
package eventstest
