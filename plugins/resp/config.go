package resp

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/mcpkit/mcpkit/pkg/respengine"
)

// EnvAuth names the environment variable that supplies the default
// target's RESP password when the configuration gives that target none.
const EnvAuth = "MCPKIT_RESP_AUTH"

// Default target, used when the configuration names none.
const (
	DefaultTargetName = "default"
	DefaultHost       = "127.0.0.1"
	DefaultPort       = 6379
	DefaultProtocol   = 3
)

// Config is the plugin's configuration (targets, file root, process
// control, limits), under "plugins.resp.config" in an `mcpkit serve`
// file, or the whole file of `mcpkit resp --config` (whose "limits" the
// command splits off first: see the command's documentation). It is decoded
// strictly; relative paths are resolved from the working directory.
type Config struct {
	// DefaultTarget names the target of the default session and of calls
	// that name none. It may be omitted when there is at most one target.
	DefaultTarget string `json:"default_target,omitempty"`
	// Targets are the endpoints the plugin may reach, by name; tools name
	// targets, never addresses. Without any, the target "default" is
	// 127.0.0.1:6379 over RESP3.
	Targets map[string]*TargetConfig `json:"targets,omitempty"`
	// FileRoot is the existing directory the management tool's downloads
	// are confined to.
	FileRoot string `json:"file_root,omitempty"`
	// Process configures the process tool (process.go).
	Process ProcessConfig `json:"process"`
}

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

// ProcessConfig enables the process tool, which is not served at all
// unless Enabled: privileged host administration of server processes.
type ProcessConfig struct {
	Enabled bool `json:"enabled,omitempty"`
	// Binary is the server executable the tool runs (default: redis-server
	// from PATH); relative to the working directory.
	Binary string `json:"binary,omitempty"`
}

// target is a validated, resolved target (the engine's).
type target = respengine.Target

// settings is the resolved configuration the plugin runs with.
type settings struct {
	defaultTarget string
	targets       map[string]*target
	fileRoot      string
	process       ProcessConfig
}

// names lists the configured target names, sorted.
func (s *settings) names() []string {
	out := make([]string, 0, len(s.targets))
	for n := range s.targets {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// parseConfig decodes raw strictly and resolves it: credentials are read,
// TLS material is loaded and paths are made absolute, so that every mistake
// stops the start with a [*mcpcore.ConfigError] naming the field, never a
// credential.
func parseConfig(raw []byte) (*settings, error) {
	var probe struct {
		Limits json.RawMessage `json:"limits"`
	}
	if json.Unmarshal(raw, &probe) == nil && probe.Limits != nil {
		return nil, &mcpcore.ConfigError{Field: "limits", Reason: "set the plugin's limits under plugins.resp.limits and the core's under limits (only the file of 'mcpkit resp --config' takes limits here)"}
	}
	var c Config
	if err := mcpcore.DecodeStrict(raw, &c); err != nil {
		return nil, err
	}
	return c.resolve()
}

func (c Config) resolve() (*settings, error) {
	s := &settings{targets: map[string]*target{}, process: c.Process}
	if len(c.Targets) == 0 {
		c.Targets = map[string]*TargetConfig{DefaultTargetName: {}}
	}
	name, err := defaultTargetName(c.DefaultTarget, c.Targets)
	if err != nil {
		return nil, err
	}
	c.DefaultTarget = name
	s.defaultTarget = c.DefaultTarget
	for name, tc := range c.Targets {
		t, err := tc.resolve(name, name == c.DefaultTarget)
		if err != nil {
			return nil, err
		}
		s.targets[name] = t
	}
	if c.FileRoot != "" {
		root, err := absPath("file_root", c.FileRoot)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
			return nil, &mcpcore.ConfigError{Field: "file_root", Reason: fmt.Sprintf("%s is not an existing directory", root)}
		}
		s.fileRoot = root
	}
	if c.Process.Binary != "" {
		bin, err := absPath("process.binary", c.Process.Binary)
		if err != nil {
			return nil, err
		}
		s.process.Binary = bin
	}
	return s, nil
}

// defaultTargetName returns the default target: the one named, else the
// only one, else "default" when there is none.
func defaultTargetName(named string, targets map[string]*TargetConfig) (string, error) {
	switch {
	case named != "":
		if _, ok := targets[named]; !ok && len(targets) > 0 {
			return "", &mcpcore.ConfigError{Field: "default_target", Reason: fmt.Sprintf("%q is not one of the targets", named)}
		}
		return named, nil
	case len(targets) == 0:
		return DefaultTargetName, nil
	case len(targets) == 1:
		for name := range targets {
			return name, nil
		}
	}
	return "", &mcpcore.ConfigError{Field: "default_target", Reason: "several targets are configured: name the default one"}
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

func (tc *TargetConfig) resolve(name string, isDefault bool) (*target, error) {
	field := "targets." + name
	if !validTargetName(name) {
		return nil, &mcpcore.ConfigError{Field: field, Reason: "a target name has 1 to 64 of [A-Za-z0-9_.-]"}
	}
	if tc == nil {
		tc = &TargetConfig{}
	}
	t := &target{Name: name, Protocol: tc.Protocol, Database: tc.Database, Username: tc.Username}
	host, port := tc.Host, tc.Port
	if host == "" {
		host = DefaultHost
	}
	if port == 0 {
		port = DefaultPort
	}
	if port < 1 || port > 65535 {
		return nil, &mcpcore.ConfigError{Field: field + ".port", Reason: fmt.Sprintf("%d is outside [1, 65535]", port)}
	}
	t.Addr = net.JoinHostPort(host, strconv.Itoa(port))
	switch t.Protocol {
	case 0:
		t.Protocol = DefaultProtocol
	case 2, 3:
	default:
		return nil, &mcpcore.ConfigError{Field: field + ".protocol", Reason: fmt.Sprintf("%d is not 2 or 3", tc.Protocol)}
	}
	if t.Database < 0 {
		return nil, &mcpcore.ConfigError{Field: field + ".database", Reason: fmt.Sprintf("%d is negative", t.Database)}
	}
	pw, ok, err := mcpcore.ReadSecret(field+".password", tc.PasswordFile, tc.PasswordEnv)
	if err != nil {
		return nil, err
	}
	if !ok && isDefault {
		pw = os.Getenv(EnvAuth)
	}
	t.Password = func() string { return pw }
	if tc.TLS != nil {
		if t.TLS, err = tc.TLS.load(field+".tls", host); err != nil {
			return nil, err
		}
	}
	if err := tc.resolveManagement(field, t); err != nil {
		return nil, err
	}
	return t, nil
}

// load builds the client TLS configuration, reading every file now.
func (c *TLSConfig) load(field, host string) (*tls.Config, error) {
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
		return nil, &mcpcore.ConfigError{Field: field + ".client_cert", Reason: "set client_cert and client_key together"}
	}
	if c.ClientCert != "" {
		cert, err := absPath(field+".client_cert", c.ClientCert)
		if err != nil {
			return nil, err
		}
		key, err := absPath(field+".client_key", c.ClientKey)
		if err != nil {
			return nil, err
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe // the path and the reason, never file contents
			}
			return nil, &mcpcore.ConfigError{Field: field + ".client_cert", Reason: fmt.Sprintf("cannot load the client certificate and key: %v", err)}
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// loadCAs reads a PEM bundle of CA certificates.
func loadCAs(field, path string) (*x509.CertPool, error) {
	p, err := absPath(field, path)
	if err != nil {
		return nil, err
	}
	pem, err := os.ReadFile(p)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &mcpcore.ConfigError{Field: field, Reason: fmt.Sprintf("cannot read %s: %v", p, err)}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, &mcpcore.ConfigError{Field: field, Reason: fmt.Sprintf("%s holds no PEM certificate", p)}
	}
	return pool, nil
}

// resolveManagement validates the management fields and sets t's: an
// http(s) origin, the token (read now) and the CA roots (loaded now).
func (tc *TargetConfig) resolveManagement(field string, t *target) error {
	if tc.ManagementURL != "" {
		u, err := url.Parse(tc.ManagementURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return &mcpcore.ConfigError{Field: field + ".management_url", Reason: "want an http or https origin such as https://host:6383 (no path, query, fragment or credentials)"}
		}
		t.ManagementURL = u.Scheme + "://" + u.Host
	}
	token, _, err := mcpcore.ReadSecret(field+".management_token", tc.ManagementTokenFile, tc.ManagementTokenEnv)
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

// absPath resolves a configured path from the working directory.
func absPath(field, p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", &mcpcore.ConfigError{Field: field, Reason: fmt.Sprintf("cannot resolve %s: %v", p, err)}
	}
	return abs, nil
}
