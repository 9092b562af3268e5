package redistest

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
	"time"
)

// writeCerts generates a throw-away CA, a server certificate for
// 127.0.0.1/::1/localhost and a client certificate (all ECDSA P-256, valid
// for 24 hours), writes them as PEM files to Dir/tls and prepares the client
// tls.Config returned by TLSConfig.
func (s *Server) writeCerts() error {
	dir := filepath.Join(s.Dir, "tls")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	now := time.Now()

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "redistest CA", Organization: []string{"mcpkit redistest"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, caCert, err := sign(caTmpl, caKey, nil, nil)
	if err != nil {
		return err
	}

	leaf := func(cn string, usage x509.ExtKeyUsage, server bool) (der []byte, key *ecdsa.PrivateKey, err error) {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			Subject:     pkix.Name{CommonName: cn, Organization: []string{"mcpkit redistest"}},
			NotBefore:   now.Add(-time.Hour),
			NotAfter:    now.Add(24 * time.Hour),
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		if server {
			tmpl.DNSNames = []string{"localhost"}
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		}
		der, _, err = sign(tmpl, key, caCert, caKey)
		return der, key, err
	}
	srvDER, srvKey, err := leaf("127.0.0.1", x509.ExtKeyUsageServerAuth, true)
	if err != nil {
		return err
	}
	cliDER, cliKey, err := leaf("redistest client", x509.ExtKeyUsageClientAuth, false)
	if err != nil {
		return err
	}

	s.CAFile = filepath.Join(dir, "ca.crt")
	s.CertFile = filepath.Join(dir, "server.crt")
	s.KeyFile = filepath.Join(dir, "server.key")
	s.ClientCertFile = filepath.Join(dir, "client.crt")
	s.ClientKeyFile = filepath.Join(dir, "client.key")

	caPEM := pemBlock("CERTIFICATE", caDER)
	cliCertPEM := pemBlock("CERTIFICATE", cliDER)
	cliKeyPEM, err := keyPEM(cliKey)
	if err != nil {
		return err
	}
	srvKeyPEM, err := keyPEM(srvKey)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path string
		data []byte
	}{
		{s.CAFile, caPEM},
		{s.CertFile, pemBlock("CERTIFICATE", srvDER)},
		{s.KeyFile, srvKeyPEM},
		{s.ClientCertFile, cliCertPEM},
		{s.ClientKeyFile, cliKeyPEM},
	} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return err
		}
	}

	pool, err := certPool(caPEM)
	if err != nil {
		return err
	}
	pair, err := tls.X509KeyPair(cliCertPEM, cliKeyPEM)
	if err != nil {
		return err
	}
	s.tlsConfig = &tls.Config{
		RootCAs:      pool,
		Certificates: []tls.Certificate{pair},
		ServerName:   "127.0.0.1",
		MinVersion:   tls.VersionTLS12,
	}
	return nil
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
	if err != nil {
		return nil, nil, err
	}
	return der, cert, nil
}

func keyPEM(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pemBlock("PRIVATE KEY", der), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
