package trellis

import (
	"errors"
	"fmt"
	"net/http"
)

// Code is a stable, machine-readable error class. Codes map onto HTTP
// statuses, CLI exit codes and MCP tool errors; scripts depend on them.
type Code string

// The stable error codes.
const (
	// CodeInvalid: the request is malformed or breaks a rule (bad field,
	// unknown field, oversized body, non-UTF-8 text).
	CodeInvalid Code = "invalid"
	// CodeNotFound: an id names nothing that exists.
	CodeNotFound Code = "not_found"
	// CodeConflict: the request is valid but the state forbids it now
	// (finishing a task twice, finishing another worker's task, a lost race).
	CodeConflict Code = "conflict"
	// CodeBudgetExhausted: a task's step or tool-call budget is spent.
	CodeBudgetExhausted Code = "budget_exhausted"
	// CodeUnauthorized: the caller may not do this.
	CodeUnauthorized Code = "unauthorized"
	// CodeUnavailable: the server or the NATS cluster cannot be reached in
	// time, or the data directory is locked by another process.
	CodeUnavailable Code = "unavailable"
	// CodeStalled: a VINE graph cannot move forward: its root is not
	// complete, and no task is ready or in progress (blocked tasks or
	// references that cannot be expanded need a human). An expected
	// outcome of running a graph, not a failure of Trellis.
	CodeStalled Code = "stalled"
	// CodeInternal: anything else; a bug or an infrastructure failure.
	CodeInternal Code = "internal"
)

// Error is the error every Trellis operation returns for a failure a caller
// can act on. Field names the offending request field, when there is one.
type Error struct {
	Code    Code   `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	Err     error  `json:"-"`
}

// Error implements error.
func (e *Error) Error() string {
	msg := e.Message
	if e.Field != "" {
		msg = e.Field + ": " + msg
	}
	if e.Err != nil && e.Message == "" {
		msg = e.Err.Error()
	}
	return string(e.Code) + ": " + msg
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code, so
// errors.Is(err, &trellis.Error{Code: trellis.CodeConflict}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Field == "" && t.Message == ""
}

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), Err: errors.Unwrap(err)}
}

// FieldError builds an invalid-input *Error naming the field.
func FieldError(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err: the code of the first *Error in its
// chain, CodeInternal for any other non-nil error, "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// AsError converts any error into an *Error (CodeInternal when it carries
// no code), keeping the chain.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Message: err.Error(), Err: err}
}

// ExitCode is the documented CLI exit code for an error code.
//
//	0 success · 1 internal · 2 invalid · 3 not_found · 4 conflict ·
//	5 budget_exhausted · 6 unauthorized · 7 unavailable · 8 stalled
func ExitCode(c Code) int {
	switch c {
	case "":
		return 0
	case CodeInvalid:
		return 2
	case CodeNotFound:
		return 3
	case CodeConflict:
		return 4
	case CodeBudgetExhausted:
		return 5
	case CodeUnauthorized:
		return 6
	case CodeUnavailable:
		return 7
	case CodeStalled:
		return 8
	default:
		return 1
	}
}

// HTTPStatus is the HTTP status for an error code.
func HTTPStatus(c Code) int {
	switch c {
	case CodeInvalid:
		return http.StatusBadRequest
	case CodeNotFound:
		return http.StatusNotFound
	case CodeConflict:
		return http.StatusConflict
	case CodeBudgetExhausted:
		return http.StatusUnprocessableEntity
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeUnavailable:
		return http.StatusServiceUnavailable
	case CodeStalled:
		return http.StatusConflict
	default:
		return http.StatusInternalServerError
	}
}
