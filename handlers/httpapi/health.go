package httpapi

import (
	"net/http"

	"github.com/trellis/trellis"
)

// Health is the body of a successful GET /healthz.
type Health struct {
	Status string `json:"status"`
}

// healthz serves GET /healthz: 200 {"status":"ok"} while the NATS
// connection is up, 503 unavailable otherwise.
func (s *server) healthz(w http.ResponseWriter, r *http.Request) error {
	if nc := s.svc.Store().Conn(); nc == nil || !nc.IsConnected() {
		return trellis.Errorf(trellis.CodeUnavailable, "not connected to NATS")
	}
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(); err != nil {
			return trellis.Errorf(trellis.CodeUnavailable, "%v", err)
		}
	}
	return s.writeJSON(w, r, http.StatusOK, Health{Status: "ok"})
}
