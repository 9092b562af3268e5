package mcpcore

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mcpkit/mcpkit/pkg/httporigin"
	"github.com/mcpkit/mcpkit/pkg/jsonscan"
)

// Config is mcpkit's configuration file. Unknown fields anywhere are errors.
//
//	{
//	  "enable": ["resp"],
//	  "plugins": {"resp": {"prefix": "ffkv", "config": {...}}},
//	  "limits": {"tool_timeout": "30s", "inline_result_bytes": 131072},
//	  "http": {"addr": "127.0.0.1:8080", "bearer_tokens_file": "/etc/mcpkit/tokens"}
//	}
type Config struct {
	// Enable selects the plugins to serve; empty means the default plugins.
	// The --plugins flag overrides it.
	Enable []string `json:"enable,omitempty"`
	// Plugins holds per-plugin settings, keyed by plugin name.
	Plugins map[string]PluginConfig `json:"plugins,omitempty"`
	// Limits overrides the core limits' defaults, limit by limit.
	Limits Limits `json:"limits"`
	// HTTP configures `mcpkit serve --http`.
	HTTP HTTPConfig `json:"http"`
}

// PluginConfig is one plugin's entry under "plugins".
type PluginConfig struct {
	// Prefix replaces the plugin name as its tool prefix. A pointer, so that
	// an explicit "" (no prefix) differs from an absent field.
	Prefix *string `json:"prefix,omitempty"`
	// Config is passed to the plugin's [Configurer].
	Config json.RawMessage `json:"config,omitempty"`
	// Limits sets the plugin's own limits, declared in its registration
	// ([PluginInfo.Limits] or [Instance.Limits]): an object of limit names
	// and values, checked like the core's "limits".
	Limits json.RawMessage `json:"limits,omitempty"`
}

// HTTPConfig configures the streamable HTTP transport.
type HTTPConfig struct {
	Addr string `json:"addr,omitempty"`
	// BearerTokensFile or BearerTokensEnv (never both) name the static bearer
	// tokens that authenticate /mcp, one per line.
	BearerTokensFile string `json:"bearer_tokens_file,omitempty"`
	BearerTokensEnv  string `json:"bearer_tokens_env,omitempty"`
	// AllowedOrigins are browser origins admitted besides same-origin ones,
	// by /mcp and every plugin route alike ("scheme://host[:port]"; "*" is
	// any origin, never with credentials: package httporigin).
	AllowedOrigins []string `json:"allowed_origins,omitempty"`
	// TLSCertFile and TLSKeyFile (both or neither) serve HTTPS: PEM files of
	// the certificate chain and its private key.
	TLSCertFile string `json:"tls_cert_file,omitempty"`
	TLSKeyFile  string `json:"tls_key_file,omitempty"`
	// MetricsAddr serves /metrics on a listener of its own, under the same
	// rules as /mcp's (bearer tokens when configured; beyond loopback only
	// with them); empty serves it at /metrics on the HTTP listener.
	MetricsAddr string `json:"metrics_addr,omitempty"`
}

// TLSConfig loads the configured certificate; it returns nil when TLS is
// not configured.
func (c HTTPConfig) TLSConfig() (*tls.Config, error) {
	if c.TLSCertFile == "" && c.TLSKeyFile == "" {
		return nil, nil
	}
	pair, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe // the path and the reason, never file contents
		}
		return nil, &ConfigError{Field: "http.tls_cert_file", Reason: fmt.Sprintf("cannot load the certificate and key: %v", err)}
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// DefaultConfig returns the configuration used without --config.
func DefaultConfig() Config { return Config{Limits: DefaultLimits()} }

// LoadConfig reads and validates a configuration file. Limits not named in
// the file keep their defaults.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	cfg := DefaultConfig()
	if err := DecodeConfig(data, &cfg); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Validate checks what does not depend on the plugins served: the core
// limits, prefix syntax and credential sources. Plugin names, the enable
// list and plugins' limits are checked by [NewServer], which knows the
// plugins (registered and embedded).
func (c Config) Validate() error {
	if err := c.Limits.Validate(); err != nil {
		return err
	}
	for _, name := range sortedKeys(c.Plugins) {
		if p := c.Plugins[name].Prefix; p != nil && *p != "" && !validSegment(*p) {
			return &ConfigError{Field: "plugins." + name + ".prefix", Reason: fmt.Sprintf("%q is not a valid tool prefix ([a-z0-9_-]+)", *p)}
		}
	}
	if (c.HTTP.TLSCertFile == "") != (c.HTTP.TLSKeyFile == "") {
		return &ConfigError{Field: "http.tls_cert_file", Reason: "set tls_cert_file and tls_key_file together"}
	}
	if c.HTTP.BearerTokensFile != "" && c.HTTP.BearerTokensEnv != "" {
		return &ConfigError{Field: "http.bearer_tokens", Reason: "set bearer_tokens_file or bearer_tokens_env, not both"}
	}
	for _, o := range c.HTTP.AllowedOrigins {
		if err := httporigin.Check(o); err != nil {
			return &ConfigError{Field: "http.allowed_origins", Reason: err.Error()}
		}
	}
	return nil
}

// MinBearerTokenBytes is the shortest static bearer token accepted: 16
// characters of the token alphabet carry about 96 bits when random, beyond
// online guessing; anything shorter is a password, not a token.
const MinBearerTokenBytes = 16

// BearerTokens reads the configured static bearer tokens, one per line
// (blank lines and lines starting with # are skipped). It returns nil when
// none are configured. A token shorter than [MinBearerTokenBytes] or with a
// character outside RFC 6750's token alphabet (letters, digits,
// "-._~+/" and trailing "=") is refused with a [*ConfigError] naming its
// line, never the token.
func (c HTTPConfig) BearerTokens() ([]string, error) {
	raw, ok, err := ReadSecret("http.bearer_tokens", c.BearerTokensFile, c.BearerTokensEnv)
	if err != nil || !ok {
		return nil, err
	}
	field := "http.bearer_tokens_file"
	if c.BearerTokensEnv != "" {
		field = "http.bearer_tokens_env"
	}
	var tokens []string
	n := 0
	for line := range strings.Lines(raw) {
		n++
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if reason := weakToken(t); reason != "" {
			return nil, &ConfigError{Field: field, Reason: fmt.Sprintf("line %d: %s", n, reason)}
		}
		tokens = append(tokens, t)
	}
	if len(tokens) == 0 {
		return nil, &ConfigError{Field: "http.bearer_tokens", Reason: "the token source holds no token"}
	}
	return tokens, nil
}

// weakToken says why t cannot serve as a bearer token, or "" when it can.
// It never quotes t.
func weakToken(t string) string {
	body := strings.TrimRight(t, "=")
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
			return fmt.Sprintf("the token has a character outside the bearer token alphabet (letters, digits, -._~+/ and trailing =) at position %d", i+1)
		}
	}
	if len(t) < MinBearerTokenBytes {
		return fmt.Sprintf("the token is %d characters long; use at least %d (random)", len(t), MinBearerTokenBytes)
	}
	return ""
}

// ReadSecret resolves a credential given as a file or an environment
// variable, never both. ok is false when neither is set. The value never
// appears in an error. A file's trailing newline is removed.
func ReadSecret(field, file, env string) (value string, ok bool, err error) {
	switch {
	case file != "" && env != "":
		return "", false, &ConfigError{Field: field, Reason: "set the _file or the _env source, not both"}
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return "", false, &ConfigError{Field: field + "_file", Reason: fmt.Sprintf("cannot read %s: %v", file, err)}
		}
		return strings.TrimRight(string(b), "\r\n"), true, nil
	case env != "":
		v, set := os.LookupEnv(env)
		if !set || v == "" {
			return "", false, &ConfigError{Field: field + "_env", Reason: fmt.Sprintf("environment variable %s is not set", env)}
		}
		return v, true, nil
	}
	return "", false, nil
}

// DecodeConfig decodes one JSON value into v, rejecting unknown fields,
// trailing data and a key repeated in one object, at any depth (a decoder
// would merge the two, or keep the last, silently): the error names the
// repeated key's path. Every configuration file of the product is read
// with it, and plugins use it for their own configuration.
func DecodeConfig(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			return ce
		}
		return &ConfigError{Field: "json", Reason: err.Error()}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &ConfigError{Field: "json", Reason: "trailing data after the configuration object"}
	}
	if path, dup := jsonscan.DuplicateKey(data); dup {
		return &ConfigError{Field: path, Reason: "the key appears more than once in its object: remove or merge the duplicates (they are refused, not merged)"}
	}
	return nil
}
