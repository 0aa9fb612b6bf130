package failover_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/failover"
)

// hostnameTLS returns a server TLS configuration whose certificate names
// only localhost (no IP address), and a pool trusting its CA.
func hostnameTLS(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	c := eventstest.NewCert(t, []string{"localhost"}, nil)
	return &tls.Config{Certificates: []tls.Certificate{c.Server}, MinVersion: tls.VersionTLS12}, c.Roots()
}

// TestMovePoolKeepsTLSWorking: a connection over TLS to a server whose
// certificate names only its hostname. The pool a move sets must not
// list servers by IP address (but the one moved to, which its scout
// reached by that address): SetServerPool makes nats.go check their
// certificates against the IP, so a later reconnect to them would fail.
// With a TLS server name configured, the certificate is checked against
// it whatever the address, and every server stays.
func TestMovePoolKeepsTLSWorking(t *testing.T) {
	t.Parallel()
	stls, roots := hostnameTLS(t)
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		TLS: true, TLSConfig: stls, TLSTimeout: 5})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(30 * time.Second) {
		t.Fatal("the NATS server did not start")
	}
	here := fmt.Sprintf("tls://localhost:%d", ns.Addr().(*net.TCPAddr).Port)
	ipOther := fmt.Sprintf("tls://127.0.0.1:%d", eventstest.FreePort(t))
	named := fmt.Sprintf("tls://localhost:%d", eventstest.FreePort(t))
	ipTarget := fmt.Sprintf("tls://127.0.0.1:%d", eventstest.FreePort(t))
	urls := strings.Join([]string{here, ipOther, named, ipTarget}, ",")

	for _, tc := range []struct {
		name       string
		serverName string
		want       func(target string) []string
	}{
		{"no server name", "", func(target string) []string {
			if target == named {
				return []string{named, here}
			}
			return []string{target, named, here}
		}},
		{"server name", "localhost", func(target string) []string {
			var w []string
			for _, u := range []string{ipOther, named, ipTarget} {
				if u != target {
					w = append(w, u)
				}
			}
			return append(append([]string{target}, w...), here)
		}},
	} {
		nc, err := nats.Connect(urls, nats.DontRandomize(), nats.Secure(&tls.Config{RootCAs: roots, ServerName: tc.serverName, MinVersion: tls.VersionTLS12}))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		m := failover.New(nc, failover.Config{Probe: failover.JetStream, Logger: quiet()})
		for _, target := range []string{named, ipTarget} {
			got := failover.PoolFor(m, target, nc.ConnectedUrl())
			if want := tc.want(target); !slices.Equal(got, want) {
				t.Errorf("%s: a move to %s sets the pool %v, want %v", tc.name, target, got, want)
			}
		}
		nc.Close()
	}
}
