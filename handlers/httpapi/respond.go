package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/trellis/trellis"
)

// ErrorResponse is the body of every failure:
// {"error":{"code":...,"field":...,"message":...}}.
type ErrorResponse struct {
	Error *trellis.Error `json:"error"`
}

// internalMessage is the message of an internal error whose response
// could not be encoded (trellis.PublicError words the others).
const internalMessage = "internal error; the server log has the details"

// writeJSON answers status with v as JSON. It encodes before writing, so
// an encoding failure is returned while an error can still be answered.
func (s *server) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if _, err := w.Write(append(body, '\n')); err != nil {
		s.log.Debug("http write response", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	return nil
}

// writeError answers err in the error shape with the status of its code
// (or of a statusError), logging what the caller cannot act on.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	te := trellis.AsError(err)
	status := statusOf(err, te)
	var se *statusError
	if errors.As(err, &se) {
		status = se.status
	}
	out := trellis.PublicError(s.log, err, "transport", "http", "method", r.Method, "path", r.URL.Path)
	switch te.Code {
	case trellis.CodeInternal:
		// Logged with its reference by trellis.PublicError.
	case trellis.CodeUnavailable:
		s.log.Warn("http service unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
	default:
		s.log.Debug("http request refused", "method", r.Method, "path", r.URL.Path, "status", status, "code", te.Code, "field", te.Field, "err", err)
	}
	if out.Message == "" {
		out.Message = http.StatusText(status)
	}
	body, mErr := json.Marshal(ErrorResponse{Error: out})
	if mErr != nil { // cannot happen for strings, but never answer without a body
		s.log.Error("http encode error response", "err", mErr)
		body = []byte(`{"error":{"code":"internal","message":"` + internalMessage + `"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Del("Content-Length")
	w.WriteHeader(status)
	if _, err := w.Write(append(body, '\n')); err != nil {
		s.log.Debug("http write error response", "method", r.Method, "path", r.URL.Path, "err", err)
	}
}
