package respengine

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
)

// Defaults of a [TargetConfig].
const (
	DefaultHost     = "127.0.0.1"
	DefaultPort     = 6379
	DefaultProtocol = 3
)

// ConfigError reports an invalid configuration value by its field (a
// dotted path, e.g. "targets.a.port"). It never carries a credential.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("config %s: %s", e.Field, e.Reason) }

// SecretReader reads a credential from a file or an environment variable
// (never both) for the configuration field field, and reports whether one
// was given. Its errors name the field, never the value.
type SecretReader func(field, file, env string) (value string, ok bool, err error)

// TargetConfig is one configured RESP endpoint.
type TargetConfig struct {
	Host     string `json:"host,omitempty"`
	Port     int    `json:"port,omitempty"`
	Protocol int    `json:"protocol,omitempty"` // 2 or 3 (default 3)
	Database int    `json:"database,omitempty"`
	Username string `json:"username,omitempty"`
	// PasswordFile or PasswordEnv (never both) give the RESP password.
	PasswordFile string     `json:"password_file,omitempty"`
	PasswordEnv  string     `json:"password_env,omitempty"`
	TLS          *TLSConfig `json:"tls,omitempty"`
	// The management endpoint the management tools talk to: an http(s)
	// origin, its bearer token (file or environment, never both) and the CA
	// it is verified with.
	ManagementURL       string `json:"management_url,omitempty"`
	ManagementTokenFile string `json:"management_token_file,omitempty"`
	ManagementTokenEnv  string `json:"management_token_env,omitempty"`
	ManagementCACert    string `json:"management_ca_cert,omitempty"`
}

// TLSConfig makes a target TLS-only. Without CACert the system roots
// verify the server; ClientCert and ClientKey go together.
type TLSConfig struct {
	CACert     string `json:"ca_cert,omitempty"`
	ServerName string `json:"server_name,omitempty"`
	ClientCert string `json:"client_cert,omitempty"`
	ClientKey  string `json:"client_key,omitempty"`
}

// validTargetName: letters, digits, '_', '-', '.', at most 64.
func validTargetName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// Resolve validates tc as the target name and resolves it: credentials are
// read with readSecret (the password, else for the default target the
// environment variable passwordEnv when not ""), TLS material is loaded and
// paths are made absolute, so that every mistake is found now, as a
// [*ConfigError] naming the field (or readSecret's error).
func (tc *TargetConfig) Resolve(name, passwordEnv string, readSecret SecretReader) (*Target, error) {
	field := "targets." + name
	if !validTargetName(name) {
		return nil, &ConfigError{Field: field, Reason: "a target name has 1 to 64 of [A-Za-z0-9_.-]"}
	}
	if tc == nil {
		tc = &TargetConfig{}
	}
	t := &Target{Name: name, Protocol: tc.Protocol, Database: tc.Database, Username: tc.Username}
	host, port := tc.Host, tc.Port
	if host == "" {
		host = DefaultHost
	}
	if port == 0 {
		port = DefaultPort
	}
	if port < 1 || port > 65535 {
		return nil, &ConfigError{Field: field + ".port", Reason: fmt.Sprintf("%d is outside [1, 65535]", port)}
	}
	t.Addr = net.JoinHostPort(host, strconv.Itoa(port))
	switch t.Protocol {
	case 0:
		t.Protocol = DefaultProtocol
	case 2, 3:
	default:
		return nil, &ConfigError{Field: field + ".protocol", Reason: fmt.Sprintf("%d is not 2 or 3", tc.Protocol)}
	}
	if t.Database < 0 {
		return nil, &ConfigError{Field: field + ".database", Reason: fmt.Sprintf("%d is negative", t.Database)}
	}
	pw, ok, err := readSecret(field+".password", tc.PasswordFile, tc.PasswordEnv)
	if err != nil {
		return nil, err
	}
	if !ok && passwordEnv != "" {
		pw = os.Getenv(passwordEnv)
	}
	t.Password = func() string { return pw }
	if tc.TLS != nil {
		if t.TLS, err = tc.TLS.Load(field+".tls", host); err != nil {
			return nil, err
		}
	}
	if err := tc.resolveManagement(field, t, readSecret); err != nil {
		return nil, err
	}
	return t, nil
}

// Load builds the client TLS configuration for a server at host, reading
// every file now; field names it in a [*ConfigError].
func (c *TLSConfig) Load(field, host string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	if c.CACert != "" {
		pool, err := loadCAs(field+".ca_cert", c.CACert)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if (c.ClientCert == "") != (c.ClientKey == "") {
		return nil, &ConfigError{Field: field + ".client_cert", Reason: "set client_cert and client_key together"}
	}
	if c.ClientCert != "" {
		cert, err := AbsPath(field+".client_cert", c.ClientCert)
		if err != nil {
			return nil, err
		}
		key, err := AbsPath(field+".client_key", c.ClientKey)
		if err != nil {
			return nil, err
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe // the path and the reason, never file contents
			}
			return nil, &ConfigError{Field: field + ".client_cert", Reason: fmt.Sprintf("cannot load the client certificate and key: %v", err)}
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// loadCAs reads a PEM bundle of CA certificates.
func loadCAs(field, path string) (*x509.CertPool, error) {
	p, err := AbsPath(field, path)
	if err != nil {
		return nil, err
	}
	pem, err := os.ReadFile(p)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &ConfigError{Field: field, Reason: fmt.Sprintf("cannot read %s: %v", p, err)}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, &ConfigError{Field: field, Reason: fmt.Sprintf("%s holds no PEM certificate", p)}
	}
	return pool, nil
}

// resolveManagement validates the management fields and sets t's: an
// http(s) origin, the token (read now) and the CA roots (loaded now).
func (tc *TargetConfig) resolveManagement(field string, t *Target, readSecret SecretReader) error {
	if tc.ManagementURL != "" {
		u, err := url.Parse(tc.ManagementURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return &ConfigError{Field: field + ".management_url", Reason: "want an http or https origin such as https://host:6383 (no path, query, fragment or credentials)"}
		}
		t.ManagementURL = u.Scheme + "://" + u.Host
	}
	token, _, err := readSecret(field+".management_token", tc.ManagementTokenFile, tc.ManagementTokenEnv)
	if err != nil {
		return err
	}
	t.ManagementToken = func() string { return token }
	if tc.ManagementCACert != "" {
		if t.ManagementCAs, err = loadCAs(field+".management_ca_cert", tc.ManagementCACert); err != nil {
			return err
		}
	}
	return nil
}

// AbsPath resolves the configured path p of field from the working
// directory.
func AbsPath(field, p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", &ConfigError{Field: field, Reason: fmt.Sprintf("cannot resolve %s: %v", p, err)}
	}
	return abs, nil
}
