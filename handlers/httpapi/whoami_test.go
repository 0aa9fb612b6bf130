package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/handlers/httpapi"
)

// fixedTokens verifies a fixed set of tokens (the token registry's
// behaviour for a known and an unknown token).
type fixedTokens map[string]auth.Identity

func (f fixedTokens) Verify(secret string) (auth.Identity, error) {
	if id, ok := f[secret]; ok {
		return id, nil
	}
	return auth.Identity{}, trellis.Errorf(trellis.CodeUnauthorized, "the token is unknown or revoked")
}

// TestWhoami: GET /v1/whoami tells the caller its name and role and the
// operations it may call, exactly those the server then accepts: a reader
// may list workflow runs but not signal or cancel them, nor add tasks; a
// worker may signal; an admin may do everything. Without a token it is
// refused; without --auth every operation is allowed.
func TestWhoami(t *testing.T) {
	t.Parallel()
	toks := fixedTokens{
		"reader-secret": {Name: "viewer", Role: auth.RoleReader},
		"worker-secret": {Name: "ci", Role: auth.RoleWorker, Queues: []string{"builds"}},
		"admin-secret":  {Name: "ops", Role: auth.RoleAdmin},
	}
	b := setup(t, httpapi.Config{Auth: toks})
	get := func(token string) (int, httpapi.Whoami) {
		t.Helper()
		req, err := http.NewRequestWithContext(b.ctx, http.MethodGet, b.server.URL+"/v1/whoami", nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := b.server.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var w httpapi.Whoami
		if res.StatusCode == http.StatusOK {
			if err := json.Unmarshal(raw, &w); err != nil {
				t.Fatalf("decode %s: %v", raw, err)
			}
		}
		return res.StatusCode, w
	}
	if s, _ := get(""); s != http.StatusUnauthorized {
		t.Fatalf("without a token: %d, want 401", s)
	}
	if s, _ := get("forged"); s != http.StatusUnauthorized {
		t.Fatalf("with an unknown token: %d, want 401", s)
	}
	cases := []struct {
		token, name string
		role        auth.Role
		may, mayNot []string
	}{
		{"reader-secret", "viewer", auth.RoleReader, []string{"queue.list", "workflow.list", "workflow.show", "audit.query"},
			[]string{"workflow.signal", "workflow.cancel", "queue.add", "queue.cancel", "queue.control", "queue.retry"}},
		{"worker-secret", "ci", auth.RoleWorker, []string{"workflow.signal", "queue.next"},
			[]string{"workflow.cancel", "queue.add", "queue.control"}},
		{"admin-secret", "ops", auth.RoleAdmin, []string{"workflow.signal", "workflow.cancel", "queue.add", "queue.cancel", "queue.control", "queue.retry"}, nil},
	}
	for _, c := range cases {
		s, w := get(c.token)
		if s != http.StatusOK || !w.Authenticated || w.Name != c.name || w.Role != c.role {
			t.Fatalf("%s: %d %+v", c.name, s, w)
		}
		for _, op := range c.may {
			if !slices.Contains(w.May, op) {
				t.Errorf("%s (%s) may not %s: %v", c.name, c.role, op, w.May)
			}
		}
		for _, op := range c.mayNot {
			if slices.Contains(w.May, op) {
				t.Errorf("%s (%s) is told it may %s", c.name, c.role, op)
			}
		}
		if !slices.IsSorted(w.May) {
			t.Errorf("%s: may is not sorted: %v", c.name, w.May)
		}
	}
	// What whoami promises is what the server does: the reader is refused
	// a signal (403), which whoami left out.
	req, _ := http.NewRequestWithContext(b.ctx, http.MethodPost, b.server.URL+"/v1/workflows/run_x/signal", nil)
	req.Header.Set("Authorization", "Bearer reader-secret")
	res, err := b.server.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("a reader's signal: %d, want 403", res.StatusCode)
	}

	// Without authentication: admin, every operation.
	open := setup(t)
	var w httpapi.Whoami
	open.do(t, http.MethodGet, "/v1/whoami", nil).expect(t, http.StatusOK, &w)
	if w.Authenticated || w.Role != auth.RoleAdmin || !slices.Contains(w.May, "queue.control") || !slices.Contains(w.May, "workflow.cancel") {
		t.Fatalf("without auth: %+v", w)
	}
	open.do(t, http.MethodGet, "/v1/whoami?x=1", nil).expectError(t, http.StatusBadRequest, trellis.CodeInvalid, "x", "")
}
