package respadmin

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/mcpkit/mcpkit/pkg/resp"
	"github.com/mcpkit/mcpkit/pkg/respengine"
)

// File is the gateway's JSON configuration file (`mcpkit resp admin
// --config`); every field is optional.
type File struct {
	// Username, the password (PasswordFile or PasswordEnv, never both),
	// Database and TLS reach the RESP server.
	Username     string                `json:"username,omitempty"`
	PasswordFile string                `json:"password_file,omitempty"`
	PasswordEnv  string                `json:"password_env,omitempty"`
	Database     int                   `json:"database,omitempty"`
	TLS          *respengine.TLSConfig `json:"tls,omitempty"`
	// TokensFile holds the callers' "ROLE TOKEN" lines (see ParseTokens).
	TokensFile string `json:"tokens_file,omitempty"`
	// TLSCertFile and TLSKeyFile, together, serve HTTPS.
	TLSCertFile       string `json:"tls_cert_file,omitempty"`
	TLSKeyFile        string `json:"tls_key_file,omitempty"`
	AuditFile         string `json:"audit_file,omitempty"`
	Reveal            string `json:"reveal,omitempty"` // "off", or the least role that sees values
	ReplicationExport bool   `json:"replication_export,omitempty"`
	Live              struct {
		MaxConnections int `json:"max_connections,omitempty"`
		QueueFrames    int `json:"queue_frames,omitempty"`
		MaxFrameBytes  int `json:"max_frame_bytes,omitempty"`
	} `json:"live"`
}

// Options resolves f into the gateway's options for the RESP server at
// target (host:port) and the TLS configuration it serves with (nil: plain
// HTTP). secret reads the password; a file that cannot be read or a value
// out of its range is a *respengine.ConfigError naming the field.
func (f File) Options(target string, secret respengine.SecretReader) (Options, *tls.Config, error) {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return Options{}, nil, &respengine.ConfigError{Field: "target", Reason: fmt.Sprintf("%q: want host:port", target)}
	}
	pw, _, err := secret("password", f.PasswordFile, f.PasswordEnv)
	if err != nil {
		return Options{}, nil, err
	}
	opts := Options{
		Target: resp.DialOptions{Addr: target, Protocol: 3, Username: f.Username, Password: pw, Database: f.Database,
			ConnectTimeout: respengine.ConnectTimeout},
		ReplicationExport: f.ReplicationExport,
		Live:              LiveOptions{MaxConnections: f.Live.MaxConnections, QueueFrames: f.Live.QueueFrames, MaxFrameBytes: f.Live.MaxFrameBytes},
	}
	if f.TLS != nil {
		if opts.Target.TLS, err = f.TLS.Load("tls", host); err != nil {
			return Options{}, nil, err
		}
	}
	if f.TokensFile != "" {
		data, err := os.ReadFile(f.TokensFile)
		if err == nil {
			opts.Tokens, err = ParseTokens(data)
		}
		if err != nil {
			return Options{}, nil, &respengine.ConfigError{Field: "tokens_file", Reason: err.Error()}
		}
	}
	if f.AuditFile != "" {
		if opts.AuditFile, err = respengine.AbsPath("audit_file", f.AuditFile); err != nil {
			return Options{}, nil, err
		}
	}
	if f.Reveal != "" && f.Reveal != "off" {
		r, err := ParseRole(f.Reveal)
		if err != nil || r == RoleNone {
			return Options{}, nil, &respengine.ConfigError{Field: "reveal", Reason: fmt.Sprintf("%q: want off, viewer, operator or admin", f.Reveal)}
		}
		opts.Reveal = r
	}
	serveTLS, err := f.serveTLS()
	return opts, serveTLS, err
}

// serveTLS loads the certificate the gateway serves HTTPS with, if any.
func (f File) serveTLS() (*tls.Config, error) {
	if (f.TLSCertFile == "") != (f.TLSKeyFile == "") {
		return nil, &respengine.ConfigError{Field: "tls_cert_file", Reason: "set tls_cert_file and tls_key_file together"}
	}
	if f.TLSCertFile == "" {
		return nil, nil
	}
	pair, err := tls.LoadX509KeyPair(f.TLSCertFile, f.TLSKeyFile)
	if err != nil {
		return nil, &respengine.ConfigError{Field: "tls_cert_file", Reason: strings.TrimSpace(err.Error())}
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}, nil
}
