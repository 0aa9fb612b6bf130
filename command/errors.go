package command

import (
	"errors"
	"fmt"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// StoreError wraps an infrastructure error (the store's, the runner's)
// with a stable code: errors that mean JetStream could not answer now are
// unavailable (worth retrying), a conflict after lost races is a conflict,
// anything else is internal. A *trellis.Error passes through unchanged.
func StoreError(what string, err error) error {
	if err == nil {
		return nil
	}
	var te *trellis.Error
	if errors.As(err, &te) {
		return err
	}
	code := trellis.CodeInternal
	switch {
	case events.IsPermissionDenied(err):
		return &trellis.Error{Code: trellis.CodeUnauthorized, Err: err, Message: fmt.Sprintf(
			"%s: the NATS server refused a subject Trellis needs (permissions violation): grant this NATS user the JetStream API and the trellis.> subjects: %v", what, err)}
	case events.IsUnavailable(err):
		code = trellis.CodeUnavailable
	case errors.Is(err, ErrConflict):
		code = trellis.CodeConflict
	}
	return &trellis.Error{Code: code, Message: fmt.Sprintf("%s: %v", what, err), Err: err}
}
