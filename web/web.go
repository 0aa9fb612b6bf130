package web

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed all:dist
var dist embed.FS

// ContentSecurityPolicy is sent with the page: scripts, styles and
// connections only from this server, no inline script, no frames, no
// plugins, images from this server or data: URLs only (rendered Markdown
// cannot load remote images).
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Assets returns the built dashboard (index.html and assets/).
func Assets() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}

// Handler serves the dashboard: GET / is the page, GET /ui/assets/... its
// scripts and styles (content-hashed names, cached for a year). Mount it
// on "GET /{$}" and "GET /ui/".
func Handler() http.Handler {
	assets := Assets()
	files := http.FileServerFS(assets)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if r.URL.Path == "/" || r.URL.Path == "/ui/" || r.URL.Path == "/ui/index.html" {
			page, err := fs.ReadFile(assets, "index.html")
			if err != nil {
				http.Error(w, "the dashboard was not built into this binary: run make ui, then rebuild", http.StatusNotFound)
				return
			}
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Cache-Control", "no-cache")
			h.Set("Content-Security-Policy", ContentSecurityPolicy)
			h.Set("X-Frame-Options", "DENY")
			_, _ = w.Write(page)
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, "/ui/")
		if !ok || !strings.HasPrefix(name, "assets/") || path.Clean(name) != name {
			notFound(w, r)
			return
		}
		if _, err := fs.Stat(assets, name); err != nil {
			notFound(w, r)
			return
		}
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + name
		files.ServeHTTP(w, r2)
	})
}

// notFound answers in the API's error shape.
func notFound(w http.ResponseWriter, r *http.Request) {
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"code": "not_found", "message": "no dashboard asset at " + r.URL.Path}})
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write(append(body, '\n'))
}
