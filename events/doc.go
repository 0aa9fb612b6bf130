// Package events holds Trellis's event log: the envelope every event is
// wrapped in, the event types and their versioned payloads, the JetStream
// stream and subject definitions, the Store (append with an expected last
// sequence for the whole aggregate, load an aggregate, read a stream from a
// sequence), and the embedded nats-server start-up.
//
// Rule of the house: the log is the truth. Every state change is an event
// appended here; every read model is a projection of these events.
//
// It decides nothing about what an event means: the Store decides only
// whether an append's expected last sequence still holds, and appends what
// the domains hand it.
package events
