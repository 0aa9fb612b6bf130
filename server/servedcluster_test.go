package server_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/server"
)

// servedCluster starts a 3-node JetStream cluster and a serve attached to
// its first node (R3 streams, the NATS API, HTTP on a free port); both
// stop when the test ends, and so does the returned context (three
// minutes at most).
func servedCluster(t *testing.T) (*eventstest.Cluster, *server.Server, context.Context) {
	t.Helper()
	c := eventstest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	srv, err := server.Start(ctx, server.Config{DataDir: t.TempDir(), NATSURL: c.URL(0), Replicas: 3, ServeAPI: true, HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return c, srv, ctx
}

// httpGet fetches path from srv's HTTP listener and returns the status
// and the body (0 and the error when the request fails).
func httpGet(srv *server.Server, path string) (int, string) {
	resp, err := http.Get(srv.Info().HTTPURL + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
