package test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOAuthTypeScriptClient: the TypeScript SDK client's OAuth provider
// (test/interop/oauth.mjs) completes the flow against `mcpkit actions
// start` with OAuth — 401, discovery, registration, sign-up on the
// authorize page, the code exchange — and posts as the user it signed up.
func TestOAuthTypeScriptClient(t *testing.T) {
	dir, err := filepath.Abs("interop")
	if err != nil {
		t.Fatal(err)
	}
	npmCI(t, dir, "@modelcontextprotocol/sdk")
	hp := startOAuth(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "oauth.mjs", "--url", hp.base+"/mcp", "--email", "tess@example.com", "--password", "correct horse battery")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "PASS author=Tess user=") {
		t.Fatalf("node oauth.mjs: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(string(out)))
}
