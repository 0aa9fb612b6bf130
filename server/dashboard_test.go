package server_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis/server"
)

// TestDashboardServed: the server serves the dashboard's page at / and
// its live feed; closing the server ends an open feed (a graceful shutdown
// does not wait for open dashboards).
func TestDashboardServed(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := server.Start(ctx, server.Config{DataDir: t.TempDir(), NATSAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", SyncInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			srv.Close()
		}
	}()
	base := srv.Info().HTTPURL
	res, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(page), "/ui/assets/") || res.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("GET /: %d %v\n%s", res.StatusCode, res.Header, page)
	}
	// Unknown paths are still the API's 404, not the page.
	if res, err := http.Get(base + "/v1/nope"); err != nil || res.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /v1/nope: %v %v", res, err)
	}

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/events/live", nil)
	feed, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Body.Close()
	rd := bufio.NewReader(feed.Body)
	if line, err := rd.ReadString('\n'); err != nil || line != "event: hello\n" {
		t.Fatalf("first line %q (%v)", line, err)
	}
	srv.Close()
	closed = true
	if _, err := io.ReadAll(rd); err != nil {
		t.Fatalf("the feed did not end cleanly when the server closed: %v", err)
	}
}
