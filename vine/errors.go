package vine

import (
	"errors"
	"fmt"
	"strings"
)

// Code is a stable error classification that transports map onto HTTP
// statuses, CLI exit codes and MCP tool errors.
type Code string

// Error codes returned by ErrorCode.
const (
	// CodeInvalid: the input (text, graph or operation) is malformed or
	// breaks a VINE constraint.
	CodeInvalid Code = "invalid"
	// CodeNotFound: a referenced node does not exist.
	CodeNotFound Code = "not_found"
	// CodeConflict: the operation is well-formed but the graph's current state
	// forbids it (for example claiming a task that is not ready to start).
	CodeConflict Code = "conflict"
	// CodeInternal: any other error.
	CodeInternal Code = "internal"
)

// ErrorCode classifies err by the first typed error of this package in its
// chain. A nil error has code "".
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var pe *ParseError
	var ve *ValidationError
	var e *Error
	switch {
	case errors.As(err, &e):
		return e.Code
	case errors.As(err, &ve), errors.As(err, &pe):
		return CodeInvalid
	}
	return CodeInternal
}

// ParseError reports text that is not valid VINE, with its 1-based line.
type ParseError struct {
	// Line is the 1-based line number the problem was found on.
	Line int
	// What names the problem, e.g. "invalid header".
	What string
	// Detail explains it.
	Detail string
}

// Error formats the error as "<what> at line <n>: <detail>".
func (e *ParseError) Error() string {
	return fmt.Sprintf("%s at line %d: %s", e.What, e.Line, e.Detail)
}

// Constraint names used in ValidationError.Constraint.
const (
	// ConstraintNoBlocks: a graph needs at least one block.
	ConstraintNoBlocks = "at least one block"
	// ConstraintInvalidNode: a node has a malformed field (id, kind, status,
	// name or uri).
	ConstraintInvalidNode = "invalid node"
	// ConstraintDuplicateID: ids are unique across tasks and references.
	ConstraintDuplicateID = "duplicate id"
	// ConstraintUnknownDependency: every `->` target must exist.
	ConstraintUnknownDependency = "unknown dependency"
	// ConstraintCycle: dependency edges must not form a cycle.
	ConstraintCycle = "cycle"
	// ConstraintIsland: every node must be reachable from the root.
	ConstraintIsland = "island"
	// ConstraintAttachmentOnRef: references carry no attachments.
	ConstraintAttachmentOnRef = "attachment on reference"
)

// ValidationError reports a graph that breaks a VINE constraint. Its message
// starts with the constraint name; IDs lists the nodes involved (for a cycle,
// the path, first node repeated at the end).
type ValidationError struct {
	// Constraint is one of the Constraint* names.
	Constraint string
	// IDs are the node ids involved.
	IDs []string
	// Detail explains the violation.
	Detail string
}

// Error formats the error as "<constraint>: <detail>".
func (e *ValidationError) Error() string { return e.Constraint + ": " + e.Detail }

// Error is a classified error from a query, mutation, expansion or the
// serializer.
type Error struct {
	// Code classifies the error.
	Code Code
	// Msg describes it.
	Msg string
	// Err is the wrapped cause, if any.
	Err error
}

// Error returns Msg, followed by the cause when there is one.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same Code and no message,
// so errors.Is(err, &vine.Error{Code: vine.CodeConflict}) tests the class.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Msg == "" && t.Err == nil && t.Code == e.Code
}

// OpError locates a failed operation of a batch.
type OpError struct {
	// Index is the 0-based position of the operation in the batch.
	Index int
	// Op is the operation name.
	Op string
	// Err is the cause.
	Err error
}

// Error formats the error as "op <index> (<op>): <cause>".
func (e *OpError) Error() string {
	return fmt.Sprintf("op %d (%s): %v", e.Index, e.Op, e.Err)
}

// Unwrap returns the cause.
func (e *OpError) Unwrap() error { return e.Err }

func errf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

func notFound(id string) *Error { return errf(CodeNotFound, "no node with id %q", id) }

// quoteList renders ids as "a", "b", "c".
func quoteList(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return strings.Join(q, ", ")
}
