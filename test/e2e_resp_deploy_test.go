package test

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/internal/redistest"
)

// TestRespDeployExamples keeps the resp examples in deploy/ working with the
// binary: deploy/resp.json serves `mcpkit resp` (its password from the
// environment, --port pointing it at a disposable server) with every limit
// at its default, and deploy/mcpkit-resp-tls.json parses, failing on this
// machine only on its missing password file.
func TestRespDeployExamples(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{Password: "deploy-example-pw"})
	cfg := filepath.Join("..", "deploy", "resp.json")
	cs := startResp(t, []string{"MCPKIT_REDIS_PASSWORD=deploy-example-pw"}, "--config", cfg, "--port", strconv.Itoa(srv.Port))
	if got := execute(t, cs, "", []any{"PING"}); got[0].Str(t) != "PONG" {
		t.Fatalf("%s: PING = %+v", cfg, got[0])
	}
	defaults := startResp(t, []string{"MCPKIT_RESP_AUTH=deploy-example-pw"}, "--port", strconv.Itoa(srv.Port))
	got, want := info(t, cs), info(t, defaults)
	if !slices.Equal(got.Limits, want.Limits) || len(got.Plugins) != 1 || !slices.Equal(got.Plugins[0].Limits, want.Plugins[0].Limits) {
		t.Fatalf("%s: limits differ from the defaults:\n%+v\n%+v\nwant\n%+v\n%+v", cfg, got.Limits, got.Plugins, want.Limits, want.Plugins)
	}

	tlsCfg := filepath.Join("..", "deploy", "mcpkit-resp-tls.json")
	out, err := exec.Command(binary(t), "serve", "--config", tlsCfg).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(string(out), "cannot read /run/secrets/redis-agent-password") {
		t.Fatalf("%s: %v\n%s", tlsCfg, err, out)
	}
}
