package resp

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpkit/mcpkit/internal/testcerts"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
)

func TestConfigDefaults(t *testing.T) {
	t.Setenv(EnvAuth, "")
	s, err := parseConfig([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	d := s.targets[s.defaultTarget]
	if s.defaultTarget != DefaultTargetName || len(s.targets) != 1 || d.Addr != "127.0.0.1:6379" || d.Protocol != 3 || d.Database != 0 || d.Password() != "" || d.TLS != nil {
		t.Fatalf("defaults = %+v / %+v", s, d)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	os.WriteFile(pwFile, []byte("s3cret-pw\n"), 0o600)
	t.Setenv("RESP_TEST_PW", "s3cret-env")
	for _, tc := range []struct{ json, field string }{
		{`{"unknown": 1}`, "json"},
		{`{"targets": {"a": {"hots": "x"}}}`, "json"},
		{`{"limits": {"max_sessions": 3}}`, "limits"},
		{`{"default_target": "b", "targets": {"a": {}}}`, "default_target"},
		{`{"targets": {"a": {}, "b": {}}}`, "default_target"},
		{`{"targets": {"a b": {}}}`, "targets.a b"},
		{`{"targets": {"a": {"port": 70000}}}`, "targets.a.port"},
		{`{"targets": {"a": {"protocol": 4}}}`, "targets.a.protocol"},
		{`{"targets": {"a": {"database": -1}}}`, "targets.a.database"},
		{`{"targets": {"a": {"password_file": "` + pwFile + `", "password_env": "RESP_TEST_PW"}}}`, "targets.a.password"},
		{`{"targets": {"a": {"password_file": "` + pwFile + `.missing"}}}`, "targets.a.password_file"},
		{`{"targets": {"a": {"password_env": "RESP_TEST_UNSET_VARIABLE"}}}`, "targets.a.password_env"},
		{`{"targets": {"a": {"tls": {"client_cert": "c.pem"}}}}`, "targets.a.tls.client_cert"},
		{`{"targets": {"a": {"tls": {"ca_cert": "` + pwFile + `"}}}}`, "targets.a.tls.ca_cert"},
		{`{"targets": {"a": {"management_url": "ftp://x"}}}`, "targets.a.management_url"},
		{`{"targets": {"a": {"management_url": "https://x/api"}}}`, "targets.a.management_url"},
		{`{"targets": {"a": {"management_token_file": "` + pwFile + `", "management_token_env": "RESP_TEST_PW"}}}`, "targets.a.management_token"},
		{`{"targets": {"a": {"management_ca_cert": "missing.pem"}}}`, "targets.a.management_ca_cert"},
		{`{"file_root": "` + pwFile + `"}`, "file_root"},
	} {
		_, err := parseConfig([]byte(tc.json))
		var ce *mcpcore.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%s: err = %v, want a ConfigError of field %s", tc.json, err, tc.field)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error carries a credential: %v", tc.json, err)
		}
	}
}

// TestConfigResolves: credentials from a file, the environment and
// MCPKIT_RESP_AUTH (default target only), TLS material loaded, relative
// paths resolved from the working directory.
func TestConfigResolves(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	certs, err := testcerts.Write(filepath.Join(dir, "tls"), "resp config test")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile("pw", []byte("from-file\n"), 0o600)
	os.Mkdir("downloads", 0o700)
	t.Setenv("RESP_TEST_PW", "from-env")
	t.Setenv(EnvAuth, "from-auth")
	rel := func(p string) string { r, _ := filepath.Rel(dir, p); return r }
	raw := `{"default_target": "local", "targets": {
		"local": {"port": 6390, "username": "agent", "tls": {"ca_cert": "` + rel(certs.CAFile) + `", "server_name": "redis.test",
			"client_cert": "` + rel(certs.ClientCertFile) + `", "client_key": "` + rel(certs.ClientKeyFile) + `"}},
		"file": {"host": "::1", "protocol": 2, "database": 3, "password_file": "pw"},
		"env": {"password_env": "RESP_TEST_PW", "management_url": "https://mgmt:6383", "management_ca_cert": "` + rel(certs.CAFile) + `"},
		"none": {}},
		"file_root": "downloads", "process": {"enabled": true, "binary": "bin/redis-server"}}`
	s, err := parseConfig([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	local, file, env, none := s.targets["local"], s.targets["file"], s.targets["env"], s.targets["none"]
	switch {
	case local.Password() != "from-auth" || local.Username != "agent" || local.Addr != "127.0.0.1:6390":
		t.Errorf("local = %+v", local)
	case local.TLS == nil || local.TLS.ServerName != "redis.test" || local.TLS.RootCAs == nil || len(local.TLS.Certificates) != 1:
		t.Errorf("local TLS = %+v", local.TLS)
	case file.Password() != "from-file" || file.Addr != "[::1]:6379" || file.Protocol != 2 || file.Database != 3:
		t.Errorf("file = %+v", file)
	case env.Password() != "from-env" || env.ManagementURL != "https://mgmt:6383":
		t.Errorf("env = %+v", env)
	case none.Password() != "":
		t.Error("MCPKIT_RESP_AUTH reached a target other than the default")
	case s.fileRoot != filepath.Join(dir, "downloads") || s.process.Binary != filepath.Join(dir, "bin/redis-server") || !s.process.Enabled:
		t.Errorf("paths: file_root %s, binary %s", s.fileRoot, s.process.Binary)
	}
	if got := strings.Join(s.names(), ","); got != "env,file,local,none" {
		t.Errorf("names = %s", got)
	}
}

// TestSecretNeverPrints: a resolved target formatted any way shows no
// password.
func TestSecretNeverPrints(t *testing.T) {
	t.Setenv(EnvAuth, "hunter2-secret")
	s, err := parseConfig([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	tg := s.targets[DefaultTargetName]
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(f, tg); strings.Contains(out, "hunter2") {
			t.Fatalf("%s prints the password: %s", f, out)
		}
	}
}

func commandFlags(t *testing.T, args ...string) *flag.FlagSet {
	t.Helper()
	fs := flag.NewFlagSet("resp", flag.ContinueOnError)
	fs.String(flagHost, "", "")
	fs.Int(flagPort, 0, "")
	fs.String(flagConfig, "", "")
	fs.String(flagToolPrefix, "resp", "")
	fs.Bool(flagAllowProc, false, "")
	fs.String(flagServerBin, "", "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

// TestCommandOptions: the command's file splits its limits between the
// core and the plugin, --host/--port override the default target, and
// --tool-prefix names the tools.
func TestCommandOptions(t *testing.T) {
	t.Setenv(EnvAuth, "")
	dir := t.TempDir()
	file := filepath.Join(dir, "resp.json")
	os.WriteFile(file, []byte(`{"default_target": "local", "targets": {"local": {"port": 6382}, "other": {"port": 6383}},
		"limits": {"max_sessions": 3, "inline_result_bytes": 2048, "tool_timeout": "30s"}}`), 0o600)
	opts, err := commandOptions(commandFlags(t, "--config", file, "--host", "10.0.0.9", "--tool-prefix", "ffkv"))
	if err != nil {
		t.Fatal(err)
	}
	pc := opts.Config.Plugins["resp"]
	if opts.Config.Limits.InlineResultBytes != 2048 || opts.Config.Limits.ToolTimeout.D() != 30*time.Second || *pc.Prefix != "ffkv" ||
		string(pc.Limits) != `{"max_sessions":3}` || len(opts.Plugins) != 1 || opts.Plugins[0] != "resp" {
		t.Fatalf("options = %+v, plugin config %s, limits %s", opts.Config, pc.Config, pc.Limits)
	}
	s, err := parseConfig(pc.Config)
	if err != nil {
		t.Fatal(err)
	}
	if s.targets["local"].Addr != "10.0.0.9:6382" || s.targets["other"].Addr != "127.0.0.1:6383" {
		t.Fatalf("targets: %s, %s", s.targets["local"].Addr, s.targets["other"].Addr)
	}

	if s.process.Enabled {
		t.Fatal("process control is on without --allow-process")
	}
	opts, err = commandOptions(commandFlags(t, "--config", file, "--allow-process", "--server-binary", "bin/valkey-server"))
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if s, err = parseConfig(opts.Config.Plugins["resp"].Config); err != nil || !s.process.Enabled || s.process.Binary != filepath.Join(wd, "bin/valkey-server") {
		t.Fatalf("--allow-process --server-binary: %v %+v", err, s.process)
	}

	// Without a file: the flags make the default target.
	opts, err = commandOptions(commandFlags(t, "--port", "7001"))
	if err != nil {
		t.Fatal(err)
	}
	if s, err = parseConfig(opts.Config.Plugins["resp"].Config); err != nil || s.targets[DefaultTargetName].Addr != "127.0.0.1:7001" {
		t.Fatalf("flags only: %v %+v", err, s)
	}

	for body, field := range map[string]string{
		`{"limits": {"max_session": 3}}`:          "limits.max_session",
		`{"limits": {"inline_result_bytes": 10}}`: "limits.inline_result_bytes",
		`{"limits": {"max_sessions": "x"}}`:       "",
		`{"targets": {"a": {}}, "extra": true}`:   "json",
		`{"limits": {"tool_timeout": 5}}`:         "limits.tool_timeout",
	} {
		os.WriteFile(file, []byte(body), 0o600)
		_, err := commandOptions(commandFlags(t, "--config", file))
		var ce *mcpcore.ConfigError
		if field == "" {
			// A plugin limit's value is checked when the server assembles.
			if err != nil {
				t.Errorf("%s: %v", body, err)
			}
			continue
		}
		if !errors.As(err, &ce) || ce.Field != field {
			t.Errorf("%s: err = %v, want field %s", body, err, field)
		}
	}
}
