package web_test

import (
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/trellis/trellis/web"
)

// TestHandler: the page is served with its Content-Security-Policy and
// without caching; the assets it names are served with a year's cache;
// anything else under /ui/ is not found, in the API's error shape.
func TestHandler(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", web.Handler())
	mux.Handle("GET /ui/", web.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	get := func(path string) (*http.Response, string) {
		t.Helper()
		res, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res, string(body)
	}

	res, page := get("/")
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
		res.Header.Get("Content-Security-Policy") != web.ContentSecurityPolicy || res.Header.Get("Cache-Control") != "no-cache" ||
		res.Header.Get("X-Frame-Options") != "DENY" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("page: %d %v", res.StatusCode, res.Header)
	}
	for _, directive := range []string{"script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "object-src 'none'"} {
		if !strings.Contains(web.ContentSecurityPolicy, directive) {
			t.Errorf("the policy lacks %s", directive)
		}
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, " style=") {
		t.Errorf("the page has inline script or style, which its policy blocks:\n%s", page)
	}
	assets := regexp.MustCompile(`/ui/assets/[A-Za-z0-9_.-]+\.(js|css)`).FindAllString(page, -1)
	if len(assets) != 2 {
		t.Fatalf("the page names %v; want one script and one stylesheet", assets)
	}
	for _, a := range assets {
		res, body := get(a)
		want := "text/javascript; charset=utf-8"
		if strings.HasSuffix(a, ".css") {
			want = "text/css; charset=utf-8"
		}
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != want ||
			res.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || len(body) == 0 {
			t.Errorf("%s: %d %v", a, res.StatusCode, res.Header)
		}
	}
	if res, _ := get("/ui/"); res.StatusCode != http.StatusOK || res.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("/ui/: %d", res.StatusCode)
	}
	for _, p := range []string{"/ui/assets/nope.js", "/ui/web.go", "/ui/assets/", "/ui/src/main.jsx"} {
		res, body := get(p)
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if res.StatusCode != http.StatusNotFound || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != "not_found" {
			t.Errorf("%s: %d %s", p, res.StatusCode, body)
		}
	}
	// Every built file is reachable and nothing else is embedded.
	err := fs.WalkDir(web.Assets(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if path != "index.html" && path != "source.sha256" && !strings.HasPrefix(path, "assets/") {
			t.Errorf("unexpected embedded file %s", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
