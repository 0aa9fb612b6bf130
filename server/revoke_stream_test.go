package server_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis/server"
)

// TestRevokeEndsRunningRequests: a reader's live feed (a request that
// runs until the client leaves) ends when its token is revoked; the
// revoke does not wait for the client to make another request.
func TestRevokeEndsRunningRequests(t *testing.T) {
	t.Parallel()
	b := startAuth(t, server.Config{})
	admin, _, err := b.natsClient(t, b.tokens["admin"])
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.ctx, 90*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", b.srv.Info().HTTPURL+"/v1/events/live", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+b.tokens["reader"])
	res, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("live feed: %d", res.StatusCode)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	for l := range lines {
		if strings.HasPrefix(l, "event: ready") {
			break
		}
	}
	if _, err := admin.RevokeToken(b.ctx, "reader", "test"); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(60 * time.Second)
	for {
		select {
		case _, ok := <-lines:
			if !ok {
				return // the feed ended
			}
		case <-deadline:
			t.Fatal("the revoked reader's live feed still runs 60 s after the revoke")
		}
	}
}
