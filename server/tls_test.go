package server_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers/natsapi"
	"github.com/trellis/trellis/server"
)

// testCA makes a CA and a server certificate for 127.0.0.1 and localhost
// signed by it, written as PEM files; it returns their paths.
func testCA(t *testing.T) (caFile, certFile, keyFile string) {
	t.Helper()
	c := eventstest.NewCert(t, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	return c.WritePEM(t, t.TempDir())
}

// TestTLSRoundTrips: with --tls-cert/--tls-key the NATS port and HTTP
// speak TLS only: a client trusting the test CA completes an API call on
// both (with a token), a client that does not trust it, or that speaks
// plain text, fails.
func TestTLSRoundTrips(t *testing.T) {
	t.Parallel()
	caFile, certFile, keyFile := testCA(t)
	b := startAuth(t, server.Config{TLSCert: certFile, TLSKey: keyFile})
	info := b.srv.Info()
	if !strings.HasPrefix(info.NATSURL, "tls://") || !strings.HasPrefix(info.HTTPURL, "https://") || !info.TLS {
		t.Fatalf("info: %+v", info)
	}
	tok := b.tokens["reader"]
	// NATS with the CA: an API round trip.
	client, _, err := b.natsClient(t, tok, nats.RootCAs(caFile))
	if err != nil {
		t.Fatalf("NATS over TLS with the CA: %v", err)
	}
	if _, err := client.List(b.ctx, trellis.ListRequest{}); err != nil {
		t.Fatalf("API over TLS: %v", err)
	}
	// Without the CA, or in plain text: refused.
	if _, _, err := b.natsClient(t, tok); err == nil {
		t.Fatal("NATS over TLS without trusting the CA connected")
	}
	plain := strings.Replace(info.NATSURL, "tls://", "nats://", 1)
	if nc, err := nats.Connect(plain, nats.Token(tok), nats.Timeout(2*time.Second)); err == nil {
		nc.Close()
		t.Fatal("a plain-text NATS client connected to the TLS port")
	}
	// HTTP with the CA.
	pool := x509.NewCertPool()
	pem, _ := os.ReadFile(caFile)
	pool.AppendCertsFromPEM(pem)
	b.http = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if status, body := b.httpDo(t, tok, "GET", "/v1/queue/tasks", ""); status != http.StatusOK {
		t.Fatalf("HTTPS with the CA: %d %s", status, body)
	}
	if status, _ := b.httpDo(t, "", "GET", "/v1/queue/tasks", ""); status != http.StatusUnauthorized {
		t.Fatalf("HTTPS without a token: %d", status)
	}
	untrusting := &http.Client{Timeout: 10 * time.Second}
	if res, err := untrusting.Get(info.HTTPURL + "/healthz"); err == nil {
		res.Body.Close()
		t.Fatal("HTTPS without trusting the CA succeeded")
	}
	if res, err := untrusting.Get(strings.Replace(info.HTTPURL, "https://", "http://", 1) + "/healthz"); err == nil && res.StatusCode == http.StatusOK {
		res.Body.Close()
		t.Fatal("plain HTTP on the TLS port answered 200")
	}
	_ = auth.RoleAdmin
	_ = natsapi.Prefix
}
