// Package memory holds the pure decision logic of memory consolidation:
// how raw observations become facts, how duplicate facts are found and
// grouped, how facts are merged from one branch into another and how a
// task's facts are classified as durable or ephemeral. It has no I/O and
// no clock: callers pass facts and observations in, and get back what to
// create, update, supersede or deduplicate.
//
// # Similarity
//
// Text is reduced to a token set (see [Tokens]): lowercased, split on every
// rune that is not a Unicode letter or digit, tokens of a single rune
// dropped. Two texts are compared by the Jaccard index of their token sets
// (see [Jaccard]); the Jaccard index of an empty set with anything is 0, so
// an empty text is never a duplicate. Two texts are duplicates when their
// Jaccard index is strictly greater than [DuplicateThreshold] (0.85): a
// similarity of exactly 17/20 is not a duplicate. Internally the test is
// done in exact integer arithmetic (20·|A∩B| > 17·|A∪B|), which gives the
// same answer as the float64 comparison Jaccard(a, b) > 0.85.
//
// # The three levels
//
// Session ([ConsolidateSession]): the session's observations of type
// insight, decision or discovery are matched, in recorded order, against the
// branch's active facts, including the facts created earlier in the same
// run. A duplicate raises the matched fact's confidence by 0.1 (capped at
// 1.0); anything else becomes a new fact with confidence 0.7 and an
// inferred [Category].
//
// Agent ([GroupDuplicates]): all active facts of a branch are grouped
// transitively by the duplicate relation; in each group the fact with the
// highest confidence (the newest on ties) is kept and the others are
// superseded by it. The surviving facts are then merged ([Merge]) into the
// task branch.
//
// Task ([Classify]): a fact is durable when its confidence is at least 0.8
// and its category is one of bug_fix, architecture, pattern, decision,
// security or performance; durable facts can then be merged ([Merge]) into
// the parent branch.
//
// # Confidence arithmetic
//
// Confidences are float64 values. Every increment is rounded to two
// decimals (math.Round(x*100)/100) before the cap at 1.0 is applied, so
// 0.7+0.1+0.1+0.1 is exactly 1.0 and 0.7+0.1 is exactly 0.8, and the
// durable boundary (confidence ≥ 0.8) behaves as in decimal arithmetic.
//
// # Scale
//
// No operation compares all pairs. Duplicate search goes through an
// inverted index with size and prefix filtering (see [Index] and the
// comment in index.go for the derivation of the bounds), and each
// candidate is confirmed by an exact overlap count, so every result equals
// the all-pairs definition exactly.
//
// The package functions keep no state and are safe for concurrent use; an
// [Index] is not.
//
// It is pure: it decides how observations consolidate into facts and appends
// no events (package agentmemory records them).
package memory
