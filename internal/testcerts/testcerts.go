// Package testcerts generates throw-away TLS material for tests: a CA, a
// server certificate for 127.0.0.1, ::1 and localhost, and a client
// certificate (ECDSA P-256, valid for 24 hours), written as PEM files. It
// needs no openssl. It is for tests only: nothing here is fit to protect
// real traffic.
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Set is one generated CA with its server and client certificates.
type Set struct {
	CAFile, CertFile, KeyFile     string // the CA, and the server's certificate and key
	ClientCertFile, ClientKeyFile string
	caPool                        *x509.CertPool
	clientPair                    tls.Certificate
}

// Write generates a Set and writes it to dir (created if needed) as ca.crt,
// server.crt, server.key, client.crt and client.key. org names the
// certificates' organization, to tell test suites apart.
func Write(dir, org string) (*Set, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caDER, caCert, err := sign(&x509.Certificate{
		Subject:               pkix.Name{CommonName: org + " CA", Organization: []string{org}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}, caKey, nil, nil)
	if err != nil {
		return nil, err
	}
	leaf := func(cn string, usage x509.ExtKeyUsage, server bool) (certPEM, keyPEM []byte, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			Subject:     pkix.Name{CommonName: cn, Organization: []string{org}},
			NotBefore:   now.Add(-time.Hour),
			NotAfter:    now.Add(24 * time.Hour),
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		if server {
			tmpl.DNSNames = []string{"localhost"}
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		}
		der, _, err := sign(tmpl, key, caCert, caKey)
		if err != nil {
			return nil, nil, err
		}
		kder, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", kder), nil
	}
	srvCert, srvKey, err := leaf("127.0.0.1", x509.ExtKeyUsageServerAuth, true)
	if err != nil {
		return nil, err
	}
	cliCert, cliKey, err := leaf(org+" client", x509.ExtKeyUsageClientAuth, false)
	if err != nil {
		return nil, err
	}
	s := &Set{
		CAFile:         filepath.Join(dir, "ca.crt"),
		CertFile:       filepath.Join(dir, "server.crt"),
		KeyFile:        filepath.Join(dir, "server.key"),
		ClientCertFile: filepath.Join(dir, "client.crt"),
		ClientKeyFile:  filepath.Join(dir, "client.key"),
	}
	caPEM := pemBlock("CERTIFICATE", caDER)
	for _, f := range []struct {
		path string
		data []byte
	}{
		{s.CAFile, caPEM}, {s.CertFile, srvCert}, {s.KeyFile, srvKey},
		{s.ClientCertFile, cliCert}, {s.ClientKeyFile, cliKey},
	} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return nil, err
		}
	}
	s.caPool = x509.NewCertPool()
	if !s.caPool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("testcerts: bad CA PEM")
	}
	if s.clientPair, err = tls.X509KeyPair(cliCert, cliKey); err != nil {
		return nil, fmt.Errorf("testcerts: client pair: %w", err)
	}
	return s, nil
}

// ClientConfig returns a fresh client configuration that trusts the CA,
// presents the client certificate and expects the server name 127.0.0.1.
func (s *Set) ClientConfig() *tls.Config {
	return &tls.Config{
		RootCAs:      s.caPool,
		Certificates: []tls.Certificate{s.clientPair},
		ServerName:   "127.0.0.1",
		MinVersion:   tls.VersionTLS12,
	}
}

// sign creates tmpl signed by parent/parentKey (self-signed if parent is nil).
func sign(tmpl *x509.Certificate, key *ecdsa.PrivateKey, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) ([]byte, *x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return der, cert, err
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
