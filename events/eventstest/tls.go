package eventstest

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
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Cert is a test CA and a server certificate it signed, for tests of
// TLS (valid from an hour ago to an hour from now).
type Cert struct {
	// CA is the CA's certificate; Server the server's certificate with
	// its key.
	CA     *x509.Certificate
	Server tls.Certificate
	caDER  []byte
	keyDER []byte
}

// NewCert makes a CA and a server certificate naming dnsNames and ips.
func NewCert(t testing.TB, dnsNames []string, ips []net.IP) *Cert {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "trellis test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "trellis test server"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: dnsNames, IPAddresses: ips}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &Cert{CA: ca, Server: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, caDER: caDER, keyDER: keyDER}
}

// Roots returns a pool that trusts the CA.
func (c *Cert) Roots() *x509.CertPool {
	roots := x509.NewCertPool()
	roots.AddCert(c.CA)
	return roots
}

// WritePEM writes the CA's certificate, the server's certificate and its
// key as PEM files into dir and returns their paths.
func (c *Cert) WritePEM(t testing.TB, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	write := func(name, typ string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", c.caDER), write("server.pem", "CERTIFICATE", c.Server.Certificate[0]),
		write("server.key", "EC PRIVATE KEY", c.keyDER)
}
