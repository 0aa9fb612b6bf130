package httpapi

import (
	"fmt"
	"net/http"

	"github.com/trellis/trellis"
)

// The VINE routes, JSON in and out, with the queue routes' strict decoding
// and error shape:
//
//	POST /v1/vine/next               {file}                               200 vine.Frontier
//	POST /v1/vine/read               trellis.VineReadRequest              200 trellis.VineReadResult
//	POST /v1/vine/write              trellis.VineWriteRequest             200 trellis.VineWriteResult
//	POST /v1/vine/claim              trellis.VineClaimRequest             200 trellis.VineClaimResult (task null when none is ready)
//	POST /v1/vine/expand             trellis.VineExpandRequest            200 trellis.VineWriteResult
//	POST /v1/vine/import             {file}                               200 trellis.VineGraphInfo
//	GET  /v1/vine/graphs/{id}/export                                      200 trellis.VineExportResult

// vineFileBody is the body of the routes that take only a file.
type vineFileBody struct {
	File string `json:"file"`
}

// vineNext serves POST /v1/vine/next: the execution frontier of a graph.
func (s *server) vineNext(w http.ResponseWriter, r *http.Request) error {
	var req vineFileBody
	if err := s.vineBody(w, r, &req); err != nil {
		return err
	}
	fr, err := s.svc.VineNext(r.Context(), trellis.VineFileRequest{File: req.File})
	if err != nil {
		return fmt.Errorf("vine next: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, fr)
}

// vineRead serves POST /v1/vine/read: a read query.
func (s *server) vineRead(w http.ResponseWriter, r *http.Request) error {
	var req trellis.VineReadRequest
	if err := s.vineBody(w, r, &req); err != nil {
		return err
	}
	res, err := s.svc.VineRead(r.Context(), req)
	if err != nil {
		return fmt.Errorf("vine read: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, res)
}

// vineWrite serves POST /v1/vine/write: one atomic batch of operations.
// Unknown keys in the operation objects are refused like unknown fields.
func (s *server) vineWrite(w http.ResponseWriter, r *http.Request) error {
	var req trellis.VineWriteRequest
	if err := s.vineBody(w, r, &req); err != nil {
		return err
	}
	res, err := s.svc.VineWrite(r.Context(), req)
	if err != nil {
		return fmt.Errorf("vine write: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, res)
}

// vineClaim serves POST /v1/vine/claim: claims one ready task for agent
// atomically; the result's task is null when none is ready.
func (s *server) vineClaim(w http.ResponseWriter, r *http.Request) error {
	var req trellis.VineClaimRequest
	if err := s.vineBody(w, r, &req); err != nil {
		return err
	}
	res, err := s.svc.VineClaim(r.Context(), req)
	if err != nil {
		return fmt.Errorf("vine claim: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, res)
}

// vineExpand serves POST /v1/vine/expand: inlines a child graph at a
// reference node.
func (s *server) vineExpand(w http.ResponseWriter, r *http.Request) error {
	var req trellis.VineExpandRequest
	if err := s.vineBody(w, r, &req); err != nil {
		return err
	}
	res, err := s.svc.VineExpand(r.Context(), req)
	if err != nil {
		return fmt.Errorf("vine expand: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, res)
}

// vineImport serves POST /v1/vine/import: takes a file under Trellis's care
// or reconciles it with the log.
func (s *server) vineImport(w http.ResponseWriter, r *http.Request) error {
	var req vineFileBody
	if err := s.vineBody(w, r, &req); err != nil {
		return err
	}
	info, err := s.svc.VineImport(r.Context(), trellis.VineFileRequest{File: req.File})
	if err != nil {
		return fmt.Errorf("vine import: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, info)
}

// vineExport serves GET /v1/vine/graphs/{id}/export: a graph's canonical
// text from the log. The id must be a graph id ("g" and 20 hex digits);
// an id no graph has is not found.
func (s *server) vineExport(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	id := r.PathValue("id")
	if !isGraphID(id) {
		return trellis.FieldError("id", "%q is not a graph id (\"g\" followed by 20 lower-case hex digits, as vine import and vine write report it)", id)
	}
	res, err := s.svc.VineExport(r.Context(), trellis.VineExportRequest{Graph: id})
	if err != nil {
		return fmt.Errorf("vine export %s: %w", id, err)
	}
	return s.writeJSON(w, r, http.StatusOK, res)
}

// vineBody checks what the POST vine routes share: no query parameters and
// a strict JSON body.
func (s *server) vineBody(w http.ResponseWriter, r *http.Request, v any) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	return s.decodeBody(w, r, v, false)
}

// isGraphID reports whether id has the form of a graph id: "g" and 20
// lower-case hex digits (events.GraphID).
func isGraphID(id string) bool {
	if len(id) != 21 || id[0] != 'g' {
		return false
	}
	for _, c := range id[1:] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
