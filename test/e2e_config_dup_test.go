package test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestConfigDuplicateKeysRefused: every configuration file of the product
// (mcpkit's own, `mcpkit resp --config`, `mcpkit resp admin --config`)
// refuses a key repeated in one object, at any depth, with exit 3 and an
// error naming the file and the key's path. Before, two "targets" objects
// were merged and both applied.
func TestConfigDuplicateKeysRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, config, path string
		args               []string
	}{
		{"serve, plugin config", `{"enable":["resp"],"plugins":{"resp":{"config":{"targets":{"a":{"host":"127.0.0.1","port":1}},"targets":{"b":{"host":"127.0.0.1","port":2}}}}}}`,
			"plugins.resp.config.targets", []string{"serve", "--stdio"}},
		{"serve, limits", `{"limits":{"tool_timeout":"1s","tool_timeout":"2s"}}`, "limits.tool_timeout", []string{"serve", "--stdio"}},
		{"resp --config", `{"targets":{"a":{"host":"127.0.0.1","port":1}},"targets":{"b":{"host":"127.0.0.1","port":2}}}`,
			"targets", []string{"resp"}},
		{"resp --config, nested", `{"targets":{"a":{"host":"127.0.0.1","port":1,"port":2}}}`, "targets.a.port", []string{"resp"}},
		{"resp admin --config", `{"username":"u","username":"v"}`, "username", []string{"resp", "admin", "--target", "127.0.0.1:1", "--listen", "127.0.0.1:0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeConfig(t, tt.config)
			cmd := exec.Command(binary(t), append(tt.args, "--config", path)...)
			out, err := cmd.CombinedOutput() // stdin at EOF: nothing would be served anyway
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 3 {
				t.Fatalf("exit %v, want 3\n%s", err, out)
			}
			if text := string(out); !strings.Contains(text, path) || !strings.Contains(text, tt.path+": the key appears more than once") {
				t.Fatalf("the error names neither the file %s nor the key %s:\n%s", path, tt.path, out)
			}
		})
	}
}
