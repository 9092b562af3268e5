package test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpkit/mcpkit/internal/redistest"
)

// deleteSession ends c's legacy session with DELETE /mcp and returns the
// status.
func deleteSession(t *testing.T, c *rawHTTP) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, c.hp.base+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("MCP-Protocol-Version", c.era)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestActionsSessionsSharedInRedis: two `mcpkit serve` processes with the
// actions plugin configured with one Redis (issue 8) and one PostgreSQL
// store serve each other's
// legacy HTTP sessions: one opened on A is used and deleted on B, and is
// then unknown to A; an unknown session is unknown to both.
func TestActionsSessionsSharedInRedis(t *testing.T) {
	t.Parallel()
	const password = "e2e-sessions-pw"
	srv := redistest.Start(t, redistest.Options{Password: password})
	pwFile := filepath.Join(t.TempDir(), "redis-password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, `{"plugins": {"actions": {"config": {"redis": {"addr": "`+srv.Addr+`", "password_file": "`+pwFile+`", "prefix": "e2e:"}, `+pgData(t)+`}}}}`)
	a := startHTTP(t, "--plugins", "actions", "--config", cfg)
	b := startHTTP(t, "--plugins", "actions", "--config", cfg)

	onA := &rawHTTP{hp: a}
	onA.initialize(t, "1")
	onB := &rawHTTP{hp: b, session: onA.session, era: onA.era}
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	resp, msgs := onB.post(t, list)
	if resp.StatusCode != http.StatusOK || len(msgs) != 1 || !strings.Contains(member(t, msgs[0], "result"), `"actions_message-post"`) {
		t.Fatalf("tools/list on B in A's session: HTTP %d %v\nB's stderr:\n%s", resp.StatusCode, msgs, b.stderr.String())
	}
	if code := deleteSession(t, onB); code != http.StatusNoContent {
		t.Fatalf("DELETE on B: HTTP %d, want 204", code)
	}
	for name, c := range map[string]*rawHTTP{"A": onA, "B": onB} {
		if resp, msgs := c.post(t, list); resp.StatusCode != http.StatusNotFound {
			t.Errorf("tools/list on %s after the DELETE: HTTP %d %v, want 404", name, resp.StatusCode, msgs)
		}
	}
	for name, hp := range map[string]*httpProc{"A": a, "B": b} {
		c := &rawHTTP{hp: hp, session: "no-such-session", era: onA.era}
		if resp, msgs := c.post(t, list); resp.StatusCode != http.StatusNotFound {
			t.Errorf("tools/list on %s in an unknown session: HTTP %d %v, want 404", name, resp.StatusCode, msgs)
		}
	}
	if strings.Contains(a.stderr.String()+b.stderr.String(), password) {
		t.Error("the Redis password appears in a log")
	}
}

// TestActionsSharedRedisNotifications: two `mcpkit serve` processes with
// the actions plugin on one Redis and one PostgreSQL store: a message posted through A's HTTP API
// reaches an MCP client of B as a log notification.
func TestActionsSharedRedisNotifications(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	cfg := writeConfig(t, `{"plugins": {"actions": {"config": {"redis": {"addr": "`+srv.Addr+`", "prefix": "e2e2:"}, `+pgData(t)+`}}}}`)
	a := startHTTP(t, "--plugins", "actions", "--config", cfg)
	b := startHTTP(t, "--plugins", "actions", "--config", cfg)
	_, logsB := listenLogs(t, b, "")
	if code, body := httpDo(t, "POST", a.base+"/api/messages", `{"channel":"shared","text":"from A","author":"ann"}`); code != 200 {
		t.Fatalf("POST on A: %d %s", code, body)
	}
	if l := firstLog(t, "B's MCP client", logsB); l.channel != "shared" || l.text != "from A" {
		t.Fatalf("B's MCP client got %+v", l)
	}
}
