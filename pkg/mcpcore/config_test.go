package mcpcore

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultLimitsMatchSeed(t *testing.T) {
	l := DefaultLimits()
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	if l.ConcurrentToolCalls != 128 || l.ToolTimeout.D() != 10*time.Second || l.InlineResultBytes != 64*KiB ||
		l.RetainedResultBytes != 128*MiB || l.ResultExpiry.D() != 5*time.Minute || l.ResultChunkBytes != 64*KiB ||
		l.FrameBytes != 64*MiB || l.Sessions != 64 || l.BatchCommands != 1024 || l.DownloadBytes != GiB {
		t.Fatalf("defaults differ from seed 000: %+v", l)
	}
}

func TestLimitsOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*Limits)
		field  string
	}{
		{func(l *Limits) { l.InlineResultBytes = MiB + 1 }, "limits.inline_result_bytes"},
		{func(l *Limits) { l.ResultChunkBytes = MaxResultChunkBytes + 1 }, "limits.result_chunk_bytes"},
		{func(l *Limits) { l.ToolTimeout = Duration(5*time.Minute + 1) }, "limits.tool_timeout"},
		{func(l *Limits) { l.ConcurrentToolCalls = 0 }, "limits.concurrent_tool_calls"},
	} {
		l := DefaultLimits()
		tc.mutate(&l)
		var ce *ConfigError
		if err := l.Validate(); !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("Validate = %v, want a ConfigError on %s", err, tc.field)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	p := writeFile(t, "c.json", `{"limits": {"tool_timeout": "30s", "inline_result_bytes": 131072}, "http": {"addr": "127.0.0.1:9000"}}`)
	cfg, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Limits.ToolTimeout.D() != 30*time.Second || cfg.Limits.InlineResultBytes != 131072 || cfg.Limits.Sessions != 64 || cfg.HTTP.Addr != "127.0.0.1:9000" {
		t.Fatalf("cfg = %+v", cfg)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"limits": {"tool_timeot": "30s"}}`, `unknown field "tool_timeot"`},
		{`{"bogus": 1}`, `unknown field "bogus"`},
		{`{"limits": {"tool_timeout": 30}}`, `duration must be a string`},
		{`{"limits": {"tool_timeout": "10m"}}`, `limits.tool_timeout`},
		{`{} {}`, `trailing data`},
		{`{"plugins": {"nope": {}}}`, `plugins.nope`},
		{`{"http": {"bearer_tokens_file": "/a", "bearer_tokens_env": "B"}}`, `not both`},
		{`{"http": {"tls_cert_file": "/a.pem"}}`, `together`},
	} {
		_, err := LoadConfig(writeFile(t, "c.json", tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrConfig) {
			t.Errorf("LoadConfig(%s) = %v, want a config error containing %q", tc.body, err, tc.want)
		}
	}
}

func TestSecrets(t *testing.T) {
	const secret = "s3cr3t-value"
	tokens := writeFile(t, "tokens", "# comment\n"+secret+"\n\nother\n")
	got, err := HTTPConfig{BearerTokensFile: tokens}.BearerTokens()
	if err != nil || strings.Join(got, ",") != secret+",other" {
		t.Fatalf("tokens = %v, %v", got, err)
	}
	t.Setenv("MCPKIT_TEST_TOKENS", secret)
	if got, err := (HTTPConfig{BearerTokensEnv: "MCPKIT_TEST_TOKENS"}).BearerTokens(); err != nil || len(got) != 1 {
		t.Fatalf("env tokens = %v, %v", got, err)
	}
	for _, c := range []HTTPConfig{
		{BearerTokensFile: tokens, BearerTokensEnv: "MCPKIT_TEST_TOKENS"},
		{BearerTokensEnv: "MCPKIT_TEST_UNSET_VARIABLE"},
		{BearerTokensFile: filepath.Join(t.TempDir(), "missing")},
		{BearerTokensFile: writeFile(t, "empty", "\n")},
	} {
		_, err := c.BearerTokens()
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("BearerTokens(%+v) = %v, want an error that does not reveal the secret", c, err)
		}
	}
	if got, err := (HTTPConfig{}).BearerTokens(); got != nil || err != nil {
		t.Fatalf("no source: %v, %v", got, err)
	}
}

func TestDurationJSON(t *testing.T) {
	b, _ := json.Marshal(Duration(90 * time.Second))
	if string(b) != `"1m30s"` {
		t.Fatalf("marshal = %s", b)
	}
}

func TestTLSConfig(t *testing.T) {
	if cfg, err := (HTTPConfig{}).TLSConfig(); cfg != nil || err != nil {
		t.Fatalf("no TLS configured: %v, %v", cfg, err)
	}
	bad := writeFile(t, "bad.pem", "not a certificate")
	_, err := HTTPConfig{TLSCertFile: bad, TLSKeyFile: bad}.TLSConfig()
	if !errors.Is(err, ErrConfig) || strings.Contains(err.Error(), "not a certificate") {
		t.Fatalf("bad PEM: %v, want a config error that does not echo the file", err)
	}
	if _, err := (HTTPConfig{TLSCertFile: "/nonexistent/c.pem", TLSKeyFile: "/nonexistent/k.pem"}).TLSConfig(); !errors.Is(err, ErrConfig) {
		t.Fatalf("missing files: %v", err)
	}
}
