package test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// scaleDir is deploy/scale, the scale-out deployment.
var scaleDir = filepath.Join("..", "deploy", "scale")

// readScale returns a file of deploy/scale.
func readScale(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(scaleDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// composeFile is the part of compose.yaml the test checks.
type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Secrets     []any             `yaml:"secrets"` // a name, or {source, ...}
		Configs     []struct {
			Source string `yaml:"source"`
		} `yaml:"configs"`
		DependsOn map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
		Healthcheck *struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
	Configs map[string]struct {
		File string `yaml:"file"`
	} `yaml:"configs"`
	Secrets map[string]struct {
		File string `yaml:"file"`
	} `yaml:"secrets"`
}

// secretNames are the secrets a compose service mounts.
func secretNames(secrets []any) []string {
	var out []string
	for _, s := range secrets {
		switch v := s.(type) {
		case string:
			out = append(out, v)
		case map[string]any:
			out = append(out, v["source"].(string))
		}
	}
	return out
}

// TestDeployScaleCompose: compose.yaml runs PostgreSQL (its password from a
// secret file, healthy before the replicas start), Redis and three mcpkit
// replicas that read PostgreSQL's password from a secret file named by
// PGPASSFILE (no password in any environment value or argument), and nginx
// pins MCP sessions by a consistent hash of Mcp-Session-Id over one server
// line per replica; every config and secret a service mounts is declared,
// and the secrets are git-ignored.
func TestDeployScaleCompose(t *testing.T) {
	var c composeFile
	if err := yaml.Unmarshal(readScale(t, "compose.yaml"), &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	pg, ok := c.Services["postgres"]
	if !ok || !strings.HasPrefix(pg.Image, "docker.io/library/postgres:") || pg.Environment["POSTGRES_PASSWORD_FILE"] != "/run/secrets/postgres-password" ||
		pg.Healthcheck == nil || !slices.Contains(pg.Healthcheck.Test, "pg_isready") {
		t.Errorf("the postgres service: %+v", pg)
	}
	var replicas []string
	for name, s := range c.Services {
		if !slices.Contains(s.Command, "serve") {
			continue
		}
		replicas = append(replicas, name)
		if s.Environment["PGPASSFILE"] != "/run/secrets/pgpass" || !slices.Contains(secretNames(s.Secrets), "pgpass") {
			t.Errorf("%s: PostgreSQL's password not from the pgpass secret: %+v", name, s)
		}
		if s.DependsOn["postgres"].Condition != "service_healthy" {
			t.Errorf("%s does not wait for a healthy postgres: %+v", name, s.DependsOn)
		}
	}
	slices.Sort(replicas)
	if !slices.Equal(replicas, []string{"mcpkit-a", "mcpkit-b", "mcpkit-c"}) {
		t.Errorf("mcpkit replicas %v, want three", replicas)
	}
	for name, s := range c.Services {
		for k, v := range s.Environment {
			if strings.Contains(strings.ToLower(k), "password") && !strings.HasSuffix(k, "_FILE") {
				t.Errorf("%s: environment %s=%q holds a password, not a file's name", name, k, v)
			}
		}
		for _, sec := range secretNames(s.Secrets) {
			if f, ok := c.Secrets[sec]; !ok || !strings.HasPrefix(f.File, "./secrets/") {
				t.Errorf("%s mounts the secret %q, declared as %+v", name, sec, f)
			}
		}
		for _, cf := range s.Configs {
			f, ok := c.Configs[cf.Source]
			if _, err := os.Stat(filepath.Join(scaleDir, f.File)); !ok || err != nil {
				t.Errorf("%s mounts the config %q: %+v %v", name, cf.Source, f, err)
			}
		}
	}
	if out, err := exec.Command("git", "check-ignore", "-q", filepath.Join(scaleDir, "secrets", "pgpass")).CombinedOutput(); err != nil {
		t.Errorf("deploy/scale/secrets is not git-ignored: %v %s", err, out)
	}

	nginx := string(readScale(t, "nginx.conf"))
	upstream := regexp.MustCompile(`(?s)upstream mcpkit \{(.*?)\}`).FindStringSubmatch(nginx)
	if upstream == nil || !strings.Contains(upstream[1], "hash $http_mcp_session_id consistent;") {
		t.Fatalf("nginx.conf does not pin sessions by a consistent hash of Mcp-Session-Id:\n%s", nginx)
	}
	var servers []string
	for _, m := range regexp.MustCompile(`server (\S+):8080;`).FindAllStringSubmatch(upstream[1], -1) {
		servers = append(servers, m[1])
	}
	if !slices.Equal(servers, replicas) {
		t.Errorf("nginx's server lines %v, compose's replicas %v: one line per replica", servers, replicas)
	}
	for _, want := range []string{"proxy_buffering off;", "proxy_set_header Upgrade $http_upgrade;", "proxy_set_header X-Forwarded-For $remote_addr;"} {
		if !strings.Contains(nginx, want) {
			t.Errorf("nginx.conf lacks %q", want)
		}
	}
}

// TestDeployScaleConfig: the replicas' mcpkit.json serves the actions and
// store plugins on two stores of one PostgreSQL database (postgres URLs
// without a password, different mcpkit_store names) beside Redis.
func TestDeployScaleConfig(t *testing.T) {
	var cfg struct {
		Enable  []string `json:"enable"`
		Plugins struct {
			Actions struct {
				Config struct {
					DataPath string          `json:"data_path"`
					Redis    json.RawMessage `json:"redis"`
				} `json:"config"`
			} `json:"actions"`
			Store struct {
				Config struct {
					Path string `json:"path"`
				} `json:"config"`
			} `json:"store"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(readScale(t, "mcpkit.json"), &cfg); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cfg.Enable, "actions") || !slices.Contains(cfg.Enable, "store") || len(cfg.Plugins.Actions.Config.Redis) == 0 {
		t.Fatalf("mcpkit.json: %+v", cfg)
	}
	stores := map[string]bool{}
	for _, raw := range []string{cfg.Plugins.Actions.Config.DataPath, cfg.Plugins.Store.Config.Path} {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "postgres" || u.Host != "postgres:5432" || u.User.Username() != "mcpkit" {
			t.Errorf("%q is not the deployment's PostgreSQL (%v)", raw, err)
			continue
		}
		if _, set := u.User.Password(); set {
			t.Errorf("%q holds a password", raw)
		}
		stores[u.Query().Get("mcpkit_store")] = true
	}
	if len(stores) != 2 || stores[""] {
		t.Errorf("the actions and store plugins share a store: %v", stores)
	}
}

// TestDeployScaleKubernetes: kubernetes.yaml runs PostgreSQL and the
// replicas with its password from the generated secret (an environment
// variable from a secretKeyRef, never a literal), the Ingress pins MCP
// sessions by Mcp-Session-Id, every key a manifest reads from the secret
// is generated by kustomization.yaml, and, where kubectl is installed,
// `kubectl kustomize` renders the whole.
func TestDeployScaleKubernetes(t *testing.T) {
	dec := yaml.NewDecoder(bytes.NewReader(readScale(t, "kubernetes.yaml")))
	kinds := map[string]map[string]any{}
	var keys []string // secret keys read by secretKeyRef
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["secretKeyRef"].(map[string]any); ok {
				keys = append(keys, ref["key"].(string))
			}
			if name, ok := v["name"].(string); ok && strings.Contains(strings.ToLower(name), "password") {
				if _, literal := v["value"]; literal {
					t.Errorf("environment %s is a literal", name)
				}
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("kubernetes.yaml: %v", err)
		}
		meta := doc["metadata"].(map[string]any)
		kinds[doc["kind"].(string)+"/"+meta["name"].(string)] = doc
		walk(doc)
	}
	for _, want := range []string{"StatefulSet/postgres", "Service/postgres", "Deployment/redis", "Service/redis", "Deployment/mcpkit", "Service/mcpkit", "Ingress/mcpkit",
		"ServiceAccount/prometheus", "Role/prometheus", "RoleBinding/prometheus", "Deployment/prometheus"} {
		if kinds[want] == nil {
			t.Errorf("kubernetes.yaml has no %s", want)
		}
	}
	var ann map[string]any
	if ing := kinds["Ingress/mcpkit"]; ing != nil {
		ann, _ = ing["metadata"].(map[string]any)["annotations"].(map[string]any)
	}
	if ann["nginx.ingress.kubernetes.io/upstream-hash-by"] != "$http_mcp_session_id" {
		t.Errorf("the Ingress does not pin sessions: %v", ann)
	}
	mcpkit, _ := json.Marshal(kinds["Deployment/mcpkit"])
	if !regexp.MustCompile(`"name":"PGPASSWORD","valueFrom":\{"secretKeyRef":\{"key":"postgres-password"`).Match(mcpkit) ||
		!strings.Contains(string(mcpkit), `"readinessProbe"`) || !strings.Contains(string(mcpkit), `"replicas":3`) {
		t.Errorf("the mcpkit Deployment: %s", mcpkit)
	}
	kustom := string(readScale(t, "kustomization.yaml"))
	for _, k := range keys {
		if !strings.Contains(kustom, "- "+k+"=secrets/"+k) {
			t.Errorf("the secret key %q is not generated by kustomization.yaml", k)
		}
	}

	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Log("kubectl is not installed: the kustomization is not rendered")
		return
	}
	dir := t.TempDir()
	for _, f := range []string{"kustomization.yaml", "kubernetes.yaml", "mcpkit.json", "prometheus-kubernetes.yml"} {
		if err := os.WriteFile(filepath.Join(dir, f), readScale(t, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "secrets"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := os.WriteFile(filepath.Join(dir, "secrets", k), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"mcpkit-tokens", "prometheus-token"} { // read by volumes, not secretKeyRef
		if err := os.WriteFile(filepath.Join(dir, "secrets", f), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(kubectl, "kustomize", dir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "kind: Ingress") || !strings.Contains(string(out), "image: registry.example.com/mcpkit:latest") ||
		!strings.Contains(string(out), "kubernetes_sd_configs") {
		t.Errorf("kubectl kustomize: %v\n%s", err, out)
	}
}
