// Package vine is the pure domain core of Trellis's support for VINE task
// graphs (.vine files, versions 1.0.0, 1.1.0 and 1.2.0): parsing, canonical
// serialization, validation, the execution frontier, read queries, atomic
// batches of mutations, and expansion of reference nodes.
//
// The package does no I/O and holds no state. A Graph is a plain value
// (metadata plus nodes in graph order, the first node being the root) that
// encodes to JSON, can be deep-copied with Clone and compared with Equal.
// Mutations are data: an Op decodes from the vine_write tool's JSON objects
// and Apply folds a batch of them into a new Graph, all or nothing, so a
// later layer can store operations in events and replay them.
//
//	g, err := vine.Parse(text)          // *ParseError with the line number
//	err = vine.Validate(g)              // *ValidationError naming the constraint
//	f := vine.Next(g)                   // ready_to_start, ready_to_complete, ...
//	res, err := vine.Apply(g, []vine.Op{{Op: vine.OpClaim, ID: "lint"}})
//	text, err = vine.Serialize(res.Graph) // canonical VINE 1.2.0
//	g2, err := vine.Expand(g, "infra", child)
//
// Errors are typed (*ParseError, *ValidationError, *Error, *OpError); ErrorCode
// maps any of them onto a stable code: invalid, not_found, conflict or
// internal. Claiming a task that is not ready to start is a conflict.
//
// Choices where VINE.md is silent are documented on the functions concerned;
// in short: the header line is matched after trimming surrounding
// whitespace; blank lines in the metadata are skipped and a duplicate
// metadata key or header annotation is an error; `-> ` targets are trimmed
// and must be valid ids, duplicate edges are merged; decision lines are kept
// verbatim after "> "; every trailing carriage return of a line is dropped;
// only @artifact, @guidance and @file lines are attachments (an unknown
// @class is description text, in references too); unknown metadata keys are
// written in alphabetical order after the known ones.
//
// It is pure: it decides whether a graph and a mutation are valid and what a
// frontier is, and appends no events (package vinegraph records the graphs'
// events).
package vine
