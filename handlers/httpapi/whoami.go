package httpapi

import (
	"net/http"
	"slices"

	"github.com/trellis/trellis/auth"
)

// Whoami is the answer of GET /v1/whoami: who the caller is and which of
// the API's operations it may call, so a client (the dashboard) offers
// only the actions the server would accept. The server still checks every
// call.
type Whoami struct {
	// Authenticated is false when the server runs without --auth: every
	// caller may do everything.
	Authenticated bool `json:"authenticated"`
	// Name is the token's name (the actor of the events its calls cause);
	// empty without authentication.
	Name string `json:"name,omitempty"`
	// Role is the token's role; admin without authentication.
	Role auth.Role `json:"role"`
	// Queues, when not empty, are the only queues a worker token may work.
	Queues []string `json:"queues,omitempty"`
	// May lists the operations (as in the auth policy: "queue.add",
	// "workflow.signal", ...) of the HTTP routes the caller may call,
	// sorted.
	May []string `json:"may"`
}

// whoami serves GET /v1/whoami.
func (s *server) whoami(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	out := Whoami{Role: auth.RoleAdmin, May: []string{}}
	id, ok := auth.FromContext(r.Context())
	if ok {
		out.Authenticated, out.Name, out.Role, out.Queues = true, id.Name, id.Role, id.Queues
	}
	for _, op := range routeOps {
		if !slices.Contains(out.May, op) && out.Role.Covers(auth.Required(op)) {
			out.May = append(out.May, op)
		}
	}
	slices.Sort(out.May)
	return s.writeJSON(w, r, http.StatusOK, out)
}
