package server_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/server"
)

// TestStartRefusals: a data directory another server holds and a listen
// address in use are "unavailable" (exit 7), not internal errors, and the
// message names the holder (its pid, and its addresses when it recorded
// them) or the address; a malformed address is invalid input naming its
// field.
func TestStartRefusals(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	data := t.TempDir()
	first, err := server.Start(ctx, server.Config{DataDir: data, NATSAddr: "127.0.0.1:0", WriteInfo: true, SyncInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()

	_, err = server.Start(ctx, server.Config{DataDir: data, NATSAddr: "127.0.0.1:0"})
	pid := strconv.Itoa(os.Getpid())
	if trellis.ErrorCode(err) != trellis.CodeUnavailable || !errors.Is(err, server.ErrLocked) ||
		!strings.Contains(err.Error(), "pid "+pid) || !strings.Contains(err.Error(), first.Info().NATSURL) {
		t.Fatalf("second server on a held data dir: %v; want unavailable naming pid %s and %s", err, pid, first.Info().NATSURL)
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	cases := []struct {
		name  string
		cfg   server.Config
		code  trellis.Code
		field string
		want  string
	}{
		{"nats port in use", server.Config{NATSAddr: addr}, trellis.CodeUnavailable, "", addr},
		{"http port in use", server.Config{NATSAddr: "127.0.0.1:0", HTTPAddr: addr}, trellis.CodeUnavailable, "", addr},
		{"nats address malformed", server.Config{NATSAddr: "localhost"}, trellis.CodeInvalid, "nats_addr", "localhost"},
		{"http address malformed", server.Config{NATSAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:http-ish"}, trellis.CodeInvalid, "http_addr", "http-ish"},
	}
	for _, c := range cases {
		c.cfg.DataDir = t.TempDir()
		c.cfg.SyncInterval = time.Second
		srv, err := server.Start(ctx, c.cfg)
		if err == nil {
			srv.Close()
			t.Errorf("%s: started", c.name)
			continue
		}
		te := trellis.AsError(err)
		if te.Code != c.code || te.Field != c.field || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (code %s, field %q); want %s, field %q, mentioning %q", c.name, err, te.Code, te.Field, c.code, c.field, c.want)
		}
		// The refused start released the data dir: a correct start works.
		c.cfg.NATSAddr, c.cfg.HTTPAddr = "127.0.0.1:0", ""
		srv, err = server.Start(ctx, c.cfg)
		if err != nil {
			t.Errorf("%s: the data dir stayed locked after the refusal: %v", c.name, err)
			continue
		}
		srv.Close()
	}
}
