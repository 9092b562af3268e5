package test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/mcpcore"
)

// TestDeployExamples keeps the example configurations in deploy/ working
// with the binary.
func TestDeployExamples(t *testing.T) {
	cfg := filepath.Join("..", "deploy", "mcpkit.json")
	cs := startStdio(t, "--config", cfg).connect(t, legacyEra)
	in := info(t, cs)
	if len(in.Plugins) != 1 || in.Plugins[0].Name != "diag" {
		t.Fatalf("%s serves %+v, want diag", cfg, in.Plugins)
	}
	if want := mcpcore.DefaultLimits().Report(); len(in.Limits) != len(want) {
		t.Fatalf("limits = %+v", in.Limits)
	} else {
		for i := range want {
			if in.Limits[i] != want[i] {
				t.Errorf("%s: limit %+v, want the default %+v", cfg, in.Limits[i], want[i])
			}
		}
	}

	// The public example parses; on this machine only its token file is missing.
	public := filepath.Join("..", "deploy", "mcpkit-public.json")
	out, err := exec.Command(binary(t), "serve", "--config", public).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(string(out), "cannot read /run/secrets/mcpkit-tokens") {
		t.Fatalf("%s: %v\n%s", public, err, out)
	}
}
