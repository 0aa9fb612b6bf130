package server_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/handlers/natsapi"
	"github.com/trellis/trellis/server"
)

// testCA makes a CA and a server certificate for 127.0.0.1 and localhost
// signed by it, written as PEM files; it returns their paths.
func testCA(t *testing.T) (caFile, certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "trellis test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "trellis"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	write := func(name, typ string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", der), write("server.key", "EC PRIVATE KEY", keyDER)
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
