package redistest

import (
	"path/filepath"

	"github.com/mcpkit/mcpkit/internal/testcerts"
)

// writeCerts generates a throw-away CA, a server certificate for
// 127.0.0.1/::1/localhost and a client certificate in Dir/tls, and prepares
// the client tls.Config returned by TLSConfig.
func (s *Server) writeCerts() error {
	set, err := testcerts.Write(filepath.Join(s.Dir, "tls"), "mcpkit redistest")
	if err != nil {
		return err
	}
	s.CAFile, s.CertFile, s.KeyFile = set.CAFile, set.CertFile, set.KeyFile
	s.ClientCertFile, s.ClientKeyFile = set.ClientCertFile, set.ClientKeyFile
	s.tlsConfig = set.ClientConfig()
	return nil
}
