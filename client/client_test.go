package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/client"
	"github.com/trellis/trellis/server"
)

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func startServer(t *testing.T) *server.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	srv, err := server.Start(ctx, server.Config{DataDir: t.TempDir(), NATSAddr: "127.0.0.1:0", ServeAPI: true, Auth: true, SyncInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// Connecting where nothing listens fails at once with code unavailable,
// wrapping ErrConnect.
func TestConnectNoServer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = client.Connect(context.Background(), "nats://"+addr, client.Options{ConnectTimeout: 2 * time.Second})
	var te *trellis.Error
	if !errors.As(err, &te) || te.Code != trellis.CodeUnavailable || !errors.Is(err, client.ErrConnect) {
		t.Fatalf("Connect to a closed port: %v; want code unavailable wrapping ErrConnect", err)
	}
}

// A token the server does not know, or none on a server with --auth, is
// refused with code unauthorized; a malformed URL is an error too.
func TestConnectRefusesBadTokens(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	ctx := context.Background()
	for name, token := range map[string]string{"unknown token": "trellis_" + "0123456789abcdef0123456789abcdef", "no token": ""} {
		_, err := client.Connect(ctx, srv.Info().NATSURL, client.Options{Token: token, ConnectTimeout: 5 * time.Second})
		var te *trellis.Error
		if !errors.As(err, &te) || te.Code != trellis.CodeUnauthorized {
			t.Errorf("%s: Connect = %v; want code unauthorized", name, err)
		}
	}
	if _, err := client.Connect(ctx, "not a url ::", client.Options{}); err == nil {
		t.Error("Connect accepted a malformed URL")
	}
}

// A token's role holds through the client: a worker token can claim and
// show tasks of its queue but not add (producers hold admin tokens) nor
// cancel; unknown ids are not found.
func TestClientKeepsTheTokensRole(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	ctx := context.Background()
	w, err := srv.Auth().Create(ctx, auth.CreateRequest{Name: "w", Role: "worker", Queues: []string{"emails"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Connect(ctx, srv.Info().NATSURL, client.Options{Token: w.Token})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Server().Version == "" {
		t.Error("Server() has no version")
	}
	admin, err := auth.ReadSecret(srv.Info().AdminTokenFile)
	if err != nil {
		t.Fatal(err)
	}
	ac, err := client.Connect(ctx, srv.Info().NATSURL, client.Options{Token: admin})
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	task, err := ac.Queue().Add(ctx, trellis.AddTaskRequest{Queue: "emails", Objective: "ok"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Queue().Show(ctx, task.TaskID); err != nil || got.TaskID != task.TaskID {
		t.Fatalf("worker token showing a task of its queue: %v, %v", got, err)
	}
	_, err = c.Queue().Add(ctx, trellis.AddTaskRequest{Queue: "emails", Objective: "a worker adds"})
	var te *trellis.Error
	if !errors.As(err, &te) || te.Code != trellis.CodeUnauthorized {
		t.Fatalf("worker token adding: %v; want unauthorized", err)
	}
	if _, err := c.Admin().Cancel(ctx, trellis.CancelRequest{TaskID: task.TaskID}); !errors.As(err, &te) || te.Code != trellis.CodeUnauthorized {
		t.Fatalf("worker token cancelling: %v; want unauthorized", err)
	}
	if _, err := c.Queue().Show(ctx, "01JAAAAAAAAAAAAAAAAAAAAAAA"); !errors.As(err, &te) || te.Code != trellis.CodeNotFound {
		t.Fatalf("show of an unknown task: %v; want not found", err)
	}
}
