package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/handlers/httpapi"
)

// TestCrossSiteRequestsAreRefused: the reproduction (a text/plain
// POST with Origin evil.example got 201 on /v1/queue/tasks and 200 on
// /v1/replay) and its variants are refused without appending anything;
// same-origin and non-browser requests go through.
func TestCrossSiteRequestsAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, httpapi.Config{Loopback: true})
	host := strings.TrimPrefix(b.server.URL, "http://")
	body := `{"objective":"csrf"}`
	cases := []struct {
		name, method, path, ctype, origin, host, site string
		body                                          string
		status                                        int
	}{
		{"text/plain cross-site add", "POST", "/v1/queue/tasks", "text/plain", "http://evil.example", "", "", body, 403},
		{"text/plain cross-site replay", "POST", "/v1/replay", "text/plain", "http://evil.example", "", "", "{}", 403},
		{"json cross-site add", "POST", "/v1/queue/tasks", "application/json", "http://evil.example", "", "", body, 403},
		{"null origin", "POST", "/v1/queue/tasks", "application/json", "null", "", "", body, 403},
		{"origin on another port", "POST", "/v1/queue/tasks", "application/json", "http://127.0.0.1:1", "", "", body, 403},
		{"fetch metadata cross-site", "POST", "/v1/queue/tasks", "application/json", "", "", "cross-site", body, 403},
		{"rebound host name", "POST", "/v1/queue/tasks", "application/json", "", "evil.example", "", body, 403},
		{"rebound host reading", "GET", "/v1/queue/tasks", "", "", "attacker.example:80", "", "", 403},
		{"rebound host on mcp", "POST", "/v1/replay", "application/json", "", "evil.example", "", "{}", 403},
		{"text/plain without origin", "POST", "/v1/queue/tasks", "text/plain", "", "", "", body, 415},
		{"form body", "POST", "/v1/queue/tasks", "application/x-www-form-urlencoded", "", "", "", "objective=x", 415},
		{"no content type", "POST", "/v1/queue/tasks", "", "", "", "", body, 415},
		{"same origin", "POST", "/v1/queue/tasks", "application/json", "http://" + host, "", "", body, 201},
		{"json with charset", "POST", "/v1/queue/tasks", "application/json; charset=utf-8", "", "", "", body, 201},
		{"localhost name", "GET", "/v1/queue/tasks", "", "", "localhost:7070", "", "", 200},
		{"empty replay", "POST", "/v1/replay", "", "", "", "", "", 200},
	}
	for _, tc := range cases {
		before := b.lastSeq(t)
		var rd io.Reader
		if tc.body != "" {
			rd = strings.NewReader(tc.body)
		}
		req, err := http.NewRequestWithContext(b.ctx, tc.method, b.server.URL+tc.path, rd)
		if err != nil {
			t.Fatal(err)
		}
		if tc.ctype != "" {
			req.Header.Set("Content-Type", tc.ctype)
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		if tc.site != "" {
			req.Header.Set("Sec-Fetch-Site", tc.site)
		}
		if tc.host != "" {
			req.Host = tc.host
		}
		res, err := b.server.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, res.StatusCode, raw, tc.status)
			continue
		}
		if tc.status >= 400 {
			if !strings.Contains(string(raw), `"code":"`+string(trellis.CodeUnauthorized)+`"`) && !strings.Contains(string(raw), `"code":"invalid"`) {
				t.Errorf("%s: body %s", tc.name, raw)
			}
			if b.lastSeq(t) != before {
				t.Errorf("%s: a refused request appended an event", tc.name)
			}
		}
	}
}
