package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
)

// decodeBody reads the request body into v, a pointer to a request struct,
// strictly: at most MaxBodyBytes bytes (else 413), valid UTF-8, exactly one
// JSON object whose keys are v's JSON field names (case-sensitive, each at
// most once), no trailing data. With allowEmpty an empty body leaves v as
// it is.
func (s *server) decodeBody(w http.ResponseWriter, r *http.Request, v any, allowEmpty bool) error {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			// The rest of the body is unread: do not keep the connection.
			w.Header().Set("Connection", "close")
			return &statusError{
				status: http.StatusRequestEntityTooLarge,
				err:    &trellis.Error{Code: trellis.CodeInvalid, Field: "body", Message: fmt.Sprintf("is larger than %d bytes", mbe.Limit), Err: err},
			}
		}
		return &trellis.Error{Code: trellis.CodeInvalid, Field: "body", Message: fmt.Sprintf("could not be read: %v", err), Err: err}
	}
	if allowEmpty && len(bytes.TrimSpace(raw)) == 0 {
		return auth.Bind(r.Context(), v)
	}
	if err := trellis.DecodeRequest(raw, v); err != nil {
		return err
	}
	return auth.Bind(r.Context(), v)
}

// queryParams parses the query string: only the allowed parameters, each
// at most once, valid UTF-8.
func queryParams(r *http.Request, allowed ...string) (map[string]string, error) {
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, &trellis.Error{Code: trellis.CodeInvalid, Field: "query", Message: fmt.Sprintf("is malformed: %v", err), Err: err}
	}
	out := make(map[string]string, len(vals))
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		vs := vals[k]
		switch {
		case !slices.Contains(allowed, k):
			if len(allowed) == 0 {
				return nil, trellis.FieldError(k, "unknown query parameter %q; this route takes none", k)
			}
			return nil, trellis.FieldError(k, "unknown query parameter %q; known: %s", k, strings.Join(allowed, ", "))
		case len(vs) > 1:
			return nil, trellis.FieldError(k, "query parameter given %d times; give it once", len(vs))
		case !utf8.ValidString(vs[0]):
			return nil, trellis.FieldError(k, "is not valid UTF-8")
		}
		out[k] = vs[0]
	}
	return out, nil
}
