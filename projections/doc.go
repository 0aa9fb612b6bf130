// Package projections holds Trellis's read models. Each projection folds the
// events of one stream into a store, records the last stream sequence it
// applied together with its state, resumes after that sequence on restart,
// and can be dropped and rebuilt by replaying the log (DESIGN.md rule 4).
//
// Projections decide nothing and append no events: they only fold the events
// the domains appended.
package projections
