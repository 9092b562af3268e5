package mcpcore

import (
	"encoding/json"
	"errors"
	"fmt"
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
		l.FrameBytes != 64*MiB || l.InflightRequestBytes != 256*MiB || l.HTTPSessions != 1024 || l.HTTPSessionIdle.D() != 15*time.Minute {
		t.Fatalf("defaults differ from seed 000: %+v", l)
	}
}

func TestCoreLimitTable(t *testing.T) {
	if err := validateLimitSpecs(CoreLimits()); err != nil {
		t.Fatal(err)
	}
	report := DefaultLimits().Report()
	if len(report) != len(coreLimits) {
		t.Fatalf("report has %d limits, the table %d", len(report), len(coreLimits))
	}
	for i, c := range coreLimits {
		// Every row reads and writes its own field: set each to its maximum
		// alone and only that limit changes in the report.
		l := DefaultLimits()
		c.set(&l, c.Max)
		for j, r := range l.Report() {
			if changed := r.Value != report[j].Value; changed != (i == j) && c.Max != c.Default {
				t.Errorf("setting %s changed %s", c.Name, r.Name)
			}
		}
		if report[i].Meaning == "" || report[i].Name != c.Name || report[i].Kind != string(c.Kind) {
			t.Errorf("report row %d = %+v", i, report[i])
		}
	}
	for _, bad := range [][]LimitSpec{
		{{Name: "Bad", Kind: LimitCount, Max: 1, Meaning: "m"}},
		{{Name: "a", Kind: LimitCount, Max: 1, Meaning: "m"}, {Name: "a", Kind: LimitCount, Max: 1, Meaning: "m"}},
		{{Name: "a", Kind: "weight", Max: 1, Meaning: "m"}},
		{{Name: "a", Kind: LimitCount, Default: 5, Max: 1, Meaning: "m"}},
		{{Name: "a", Kind: LimitCount, Min: -1, Max: 1, Meaning: "m"}},
		{{Name: "a", Kind: LimitCount, Max: 1, Meaning: ""}},
		{{Name: "a", Kind: LimitCount, Max: 1, Meaning: "two\nlines"}},
	} {
		if err := validateLimitSpecs(bad); err == nil {
			t.Errorf("validateLimitSpecs(%+v) accepted it", bad)
		}
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
		{func(l *Limits) { l.InflightRequestBytes = 16*GiB + 1 }, "limits.inflight_request_bytes"},
		{func(l *Limits) { l.FrameBytes = 512 * MiB }, "limits.inflight_request_bytes"}, // above the default inflight budget
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
	if cfg.Limits.ToolTimeout.D() != 30*time.Second || cfg.Limits.InlineResultBytes != 131072 || cfg.Limits.ConcurrentToolCalls != 128 || cfg.HTTP.Addr != "127.0.0.1:9000" {
		t.Fatalf("cfg = %+v", cfg)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"limits": {"tool_timeot": "30s"}}`, `config limits.tool_timeot: unknown field "tool_timeot": no such limit`},
		{`{"bogus": 1}`, `unknown field "bogus"`},
		{`{"limits": {"tool_timeout": 30}}`, `limits.tool_timeout: duration must be a string`},
		{`{"limits": {"frame_bytes": 1.5}}`, `limits.frame_bytes: must be an integer`},
		{`{"limits": {"frame_bytes": "64MiB"}}`, `limits.frame_bytes: must be an integer`},
		{`{"limits": [1]}`, `limits: must be an object`},
		{`{"limits": {"tool_timeout": "10m"}}`, `limits.tool_timeout`},
		{`{"limits": {"inflight_request_bytes": 1048576}}`, `below frame_bytes`},
		{`{} {}`, `trailing data`},
		{`{"plugins": {"x": {"prefix": "Bad"}}}`, `plugins.x.prefix`},
		{`{"http": {"bearer_tokens_file": "/a", "bearer_tokens_env": "B"}}`, `not both`},
		{`{"http": {"tls_cert_file": "/a.pem"}}`, `together`},
		{`{"http": {"allowed_origins": ["https://ok.example", "app.example"]}}`, `http.allowed_origins: "app.example" is not an origin`},
		{`{"http": {"allowed_origins": ["https://app.example/app"]}}`, `http.allowed_origins`},
	} {
		_, err := LoadConfig(writeFile(t, "c.json", tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrConfig) {
			t.Errorf("LoadConfig(%s) = %v, want a config error containing %q", tc.body, err, tc.want)
		}
	}
}

func TestSecrets(t *testing.T) {
	const secret, other = "s3cr3t-value-0123456789", "other+token/ABCDEF=="
	tokens := writeFile(t, "tokens", "# comment\n"+secret+"\n\n  "+other+"\n")
	got, err := HTTPConfig{BearerTokensFile: tokens}.BearerTokens()
	if err != nil || strings.Join(got, ",") != secret+","+other {
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

// TestWeakBearerTokens: a tokens file holding an unusable or guessable token
// stops the start with an error naming the line, never the token.
func TestWeakBearerTokens(t *testing.T) {
	const good = "good-token-0123456789"
	for _, tc := range []struct {
		name, bad string
		line      int
		want      string
	}{
		{"space inside", "half one-half-two-0123", 3, "outside the bearer token alphabet"},
		{"single character", "x", 3, "1 characters long"},
		{"fifteen characters", "abcdefghijklmno", 3, "at least 16"},
		{"quote", `"quoted-token-0123456"`, 3, "outside the bearer token alphabet"},
		{"equals inside", "abc=defghijklmnopqrs", 3, "outside the bearer token alphabet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, "tokens", "# tokens\n"+good+"\n"+tc.bad+"\n")
			_, err := HTTPConfig{BearerTokensFile: file}.BearerTokens()
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != "http.bearer_tokens_file" || !strings.Contains(ce.Reason, fmt.Sprintf("line %d:", tc.line)) || !strings.Contains(ce.Reason, tc.want) {
				t.Fatalf("err = %v, want a ConfigError on line %d saying %q", err, tc.line, tc.want)
			}
			if strings.Contains(err.Error(), tc.bad) || strings.Contains(err.Error(), good) {
				t.Fatalf("the error reveals a token: %v", err)
			}
		})
	}
	t.Setenv("MCPKIT_TEST_WEAK", "short")
	var ce *ConfigError
	if _, err := (HTTPConfig{BearerTokensEnv: "MCPKIT_TEST_WEAK"}).BearerTokens(); !errors.As(err, &ce) || ce.Field != "http.bearer_tokens_env" || !strings.Contains(ce.Reason, "line 1:") {
		t.Fatalf("weak env token: %v", err)
	}
}

// TestConfigDuplicateKeys: a key repeated in one object of a configuration
// file, at any depth, is refused with its path and the file's name
// (before: the two were merged, or the last kept, silently); plugins'
// configuration decoded with DecodeConfig is refused the same way.
func TestConfigDuplicateKeys(t *testing.T) {
	tests := []struct{ name, file, path string }{
		{"top level", `{"enable":["a"],"enable":["b"]}`, "enable"},
		{"limits", `{"limits":{"tool_timeout":"1s","frame_bytes":65536,"tool_timeout":"2s"}}`, "limits.tool_timeout"},
		{"plugin config", `{"plugins":{"p":{"config":{"targets":{"a":{}},"targets":{"b":{}}}}}}`, "plugins.p.config.targets"},
		{"escaped spelling", `{"plugins":{"p":{"prefix":"x","pr\u0065fix":"y"}}}`, "plugins.p.prefix"},
		{"in an array", `{"http":{"allowed_origins":["a"]},"plugins":{"p":{"config":{"l":[{"k":1,"k":2}]}}}}`, "plugins.p.config.l[0].k"},
	}
	for _, tt := range tests {
		path := writeFile(t, "mcpkit.json", tt.file)
		_, err := LoadConfig(path)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tt.path || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "more than once") {
			t.Errorf("%s: LoadConfig = %v, want a ConfigError at %s naming %s", tt.name, err, tt.path, path)
		}
	}
	var v struct {
		Targets map[string]json.RawMessage `json:"targets"`
	}
	err := DecodeConfig([]byte(`{"targets":{"a":{"host":"h"},"a":{"port":1}}}`), &v)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "targets.a" {
		t.Errorf("DecodeConfig of a plugin's configuration = %v, want a ConfigError at targets.a", err)
	}
	if _, err := LoadConfig(writeFile(t, "ok.json", `{"plugins":{"a":{"prefix":"x"},"b":{"prefix":"x"}}}`)); err != nil {
		t.Errorf("the same key in two objects: %v", err)
	}
}
