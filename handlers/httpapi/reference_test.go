package httpapi_test

import (
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/handlers/httpapi"
)

// TestRouteTableIsCurrent: the route table of docs/reference/http.md and
// the routes the server registers are the same set: a route added without
// its row, or a row left behind by a removed route, fails here.
func TestRouteTableIsCurrent(t *testing.T) {
	const doc = "../../docs/reference/http.md"
	text, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	h := httpapi.New(&handlers.Service{}, httpapi.Config{Mounts: map[string]http.Handler{
		"/mcp": http.NotFoundHandler(), "/metrics": http.NotFoundHandler()}})
	served := map[string]bool{}
	for _, p := range httpapi.Patterns(h) {
		switch {
		case p == "/mcp":
			p = "* /mcp"
		case !strings.Contains(p, " "):
			p = "GET " + p
		}
		served[p] = true
	}
	// | METHOD | `path?query` | body | success |; the dashboard's row
	// (`/`, `/ui/assets/...`) is served by the server's mount, not a route.
	row := regexp.MustCompile("(?m)^\\| (GET|POST|PUT|PATCH|DELETE|\\*) \\| `([^`?]+)")
	documented := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(text), -1) {
		if m[2] == "/" {
			continue
		}
		documented[m[1]+" "+m[2]] = true
	}
	var missing, stale []string
	for p := range served {
		if !documented[p] {
			missing = append(missing, p)
		}
	}
	for p := range documented {
		if !served[p] {
			stale = append(stale, p)
		}
	}
	slices.Sort(missing)
	slices.Sort(stale)
	if len(missing) > 0 {
		t.Errorf("%s has no row for these routes: %s", doc, strings.Join(missing, ", "))
	}
	if len(stale) > 0 {
		t.Errorf("%s has rows for routes the server does not serve: %s", doc, strings.Join(stale, ", "))
	}
	if len(served) < 40 {
		t.Fatalf("only %d routes: the table check proves little", len(served))
	}
}
