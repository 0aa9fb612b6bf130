package httpapi

import (
	"fmt"
	"net/http"

	"github.com/trellis/trellis"
)

// Code memory routes:
//
//	POST /v1/code/search        trellis.SearchRequest   200 trellis.SearchResult
//	GET  /v1/code/chunks/{id}                           200 trellis.ChunkHit
//	POST /v1/code/explain       trellis.ExplainRequest  200 trellis.ExplainResult
func (s *server) codeRoutes() {
	s.handle("POST /v1/code/search", s.searchChunks)
	s.handle("GET /v1/code/chunks/{id}", s.showChunk)
	s.handle("POST /v1/code/explain", s.explainCode)
}

func (s *server) explainCode(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	var req trellis.ExplainRequest
	if err := s.decodeBody(w, r, &req, false); err != nil {
		return err
	}
	res, err := s.svc.Explain(r.Context(), req)
	if err != nil {
		return fmt.Errorf("explain: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, res)
}

func (s *server) searchChunks(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	var req trellis.SearchRequest
	if err := s.decodeBody(w, r, &req, false); err != nil {
		return err
	}
	res, err := s.svc.Search(r.Context(), req)
	if err != nil {
		return fmt.Errorf("search: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, res)
}

func (s *server) showChunk(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	res, err := s.svc.Chunk(r.Context(), r.PathValue("id"))
	if err != nil {
		return fmt.Errorf("chunk: %w", err)
	}
	return s.writeJSON(w, r, http.StatusOK, res)
}
