package actions

import (
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/pkg/action/oauth"
	"github.com/mcpkit/mcpkit/pkg/cli"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
)

// startOptions takes the file's settings, fills MCP_SESSION_TTL and
// MCP_ALLOWED_ORIGINS where the file leaves them unset, refuses bad ones,
// lets --data win over data_path and serves without a prefix unless the
// file gives one.
func TestStartOptions(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	file := mcpcore.DefaultConfig()
	opts, _, err := startOptions(file, "", env(EnvSessionTTL, "3600", EnvAllowedOrigins, "https://a.example, https://b.example"))
	if err != nil {
		t.Fatal(err)
	}
	c := opts.Config
	if c.Limits.HTTPSessionIdle.D() != time.Hour || !slices.Equal(c.HTTP.AllowedOrigins, []string{"https://a.example", "https://b.example"}) ||
		*c.Plugins["actions"].Prefix != "" {
		t.Errorf("from the environment: idle %v, origins %q, prefix %q", c.Limits.HTTPSessionIdle.D(), c.HTTP.AllowedOrigins, *c.Plugins["actions"].Prefix)
	}

	prefix := "ex"
	file.Limits.HTTPSessionIdle = mcpcore.Duration(10 * time.Minute)
	file.HTTP.AllowedOrigins = []string{"https://file.example"}
	file.Plugins = map[string]mcpcore.PluginConfig{"actions": {Prefix: &prefix, Config: json.RawMessage(`{"data_path": "/from/file", "instructions": "kept"}`)}, "store": {}}
	opts, _, err = startOptions(file, "/from/flag", env(EnvSessionTTL, "3600", EnvAllowedOrigins, "https://a.example"))
	if err != nil {
		t.Fatal(err)
	}
	c = opts.Config
	var cfg Config
	if err := json.Unmarshal(c.Plugins["actions"].Config, &cfg); err != nil {
		t.Fatal(err)
	}
	if c.Limits.HTTPSessionIdle.D() != 10*time.Minute || !slices.Equal(c.HTTP.AllowedOrigins, []string{"https://file.example"}) ||
		*c.Plugins["actions"].Prefix != "ex" || cfg.DataPath != "/from/flag" || cfg.Instructions != "kept" || len(c.Plugins) != 1 {
		t.Errorf("the file wins: %+v, actions config %+v", c, cfg)
	}

	if _, _, err := startOptions(mcpcore.DefaultConfig(), "", env(EnvSessionTTL, "soon")); !errors.Is(err, mcpcore.ErrConfig) {
		t.Errorf("MCP_SESSION_TTL=soon: %v", err)
	}
	opts, _, err = startOptions(mcpcore.DefaultConfig(), "", env(EnvSessionTTL, "90000"))
	if err != nil || opts.Config.Validate() == nil {
		t.Errorf("MCP_SESSION_TTL=90000 (over 24h) passes validation: %v", err)
	}
}

// startOptions turns the OAuth server on when the file leaves "oauth"
// unset (as in Keryx, /mcp wants a token), keeps "oauth": false off and an
// object as given, and, with MCP disabled (by the file or
// MCP_SERVER_ENABLED), serves no /mcp and no OAuth server, saying why.
func TestStartOptionsOAuthAndMCP(t *testing.T) {
	tests := []struct {
		name, config, enabled string
		wantOAuth             bool
		wantNoMCP             string
	}{
		{"default", ``, "", true, ""},
		{"no oauth key", `{"instructions": "x"}`, "", true, ""},
		{"opt-out", `{"oauth": false}`, "", false, ""},
		{"an object", `{"oauth": {"register_limit": 9}}`, "", true, ""},
		{"true", `{"oauth": true}`, "", true, ""},
		{"disabled by the environment", ``, "false", false, "MCP_SERVER_ENABLED=false"},
		{"disabled by the file", `{"mcp_enabled": false}`, "true", false, "plugins.actions.config.mcp_enabled is false"},
	}
	for _, tt := range tests {
		file := mcpcore.DefaultConfig()
		if tt.config != "" {
			file.Plugins = map[string]mcpcore.PluginConfig{"actions": {Config: json.RawMessage(tt.config)}}
		}
		opts, noMCP, err := startOptions(file, "", func(k string) string {
			if k == EnvEnabled {
				return tt.enabled
			}
			return ""
		})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var cfg Config
		if err := mcpcore.DecodeConfig(opts.Config.Plugins["actions"].Config, &cfg); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if cfg.oauthOn() != tt.wantOAuth || noMCP != tt.wantNoMCP {
			t.Errorf("%s: OAuth on %v, noMCP %q; want %v, %q", tt.name, cfg.oauthOn(), noMCP, tt.wantOAuth, tt.wantNoMCP)
		}
		if tt.name == "an object" && cfg.OAuth.RegisterLimit != 9 {
			t.Errorf("%s: the object is not kept: %+v", tt.name, cfg.OAuth)
		}
	}
}

// `mcpkit actions templates DIR` writes every default page file, which
// the OAuth server then serves from templates_dir, and overwrites none.
func TestTemplatesCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "templates")
	var stderr strings.Builder
	run := func() int {
		fs := flag.NewFlagSet("actions", flag.ContinueOnError)
		fs.String(flagData, "", "")
		return runCommand(t.Context(), &cli.Env{Command: &cli.Command{Name: "actions"}, Flags: fs, Args: []string{"templates", dir},
			Stdout: io.Discard, Stderr: &stderr, Logger: slog.New(slog.NewTextHandler(&stderr, nil))})
	}
	if code := run(); code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, name := range oauth.TemplateNames {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "oauth-authorize.html"), []byte("<p>own page {{appName}}</p>{{{hiddenFields}}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run(); code == cli.ExitOK || !strings.Contains(stderr.String(), "exists") {
		t.Fatalf("second run over existing files: exit %d, %s", code, stderr.String())
	}
	base := oauthWeb(t, `{"oauth": {"templates_dir": "`+dir+`"}}`)
	client := registerClient(t, base, "http://localhost/cb")
	resp, err := http.Get(base + "/oauth/authorize?response_type=code&code_challenge_method=S256&code_challenge=" + strings.Repeat("a", 43) + "&client_id=" + client)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(string(page), "<p>own page example</p>") {
		t.Fatalf("served page: %s", page)
	}
}
