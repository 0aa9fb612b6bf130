// Package servicetest starts the composed service (handlers.Service) on an
// embedded NATS server for the tests of the domains and of the
// composition: one setup instead of a copy in each domain's tests, plus
// the fixtures they share (a queue task run to its end, files in a
// workspace, a small VINE graph).
//
// It decides nothing and appends no events of its own: everything it
// records goes through the service like a caller's request (RunTask
// appends a task's added, claimed and completed events on TRELLIS_QUEUE).
package servicetest
