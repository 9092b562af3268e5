package test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// runScript is the absolute path of scripts/run.sh, what `make run` runs.
func runScript(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "scripts", "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runMap is what run.sh printed first on stdout: the rows of its map by
// label (the first word of each value) and the mcpServers snippet.
type runMap struct {
	rows    map[string]string
	snippet string
}

// The map's labels, in the order run.sh prints them.
var runMapLabels = []string{"MCP", "MCP token file", "health", "app API", "app OpenAPI", "app WebSocket", "app data file",
	"OAuth authorize", "OAuth metadata", "resource metadata", "OAuth register", "store file", "redis-server"}

var runMapRow = regexp.MustCompile(`^  (\S.*?\S)  +(\S+)`)

// parseRunMap reads the map from run.sh's stdout, which must start with it.
func parseRunMap(t *testing.T, out string) runMap {
	t.Helper()
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "mcpkit serves the whole product on loopback") {
		t.Fatalf("stdout does not start with the map:\n%s", out)
	}
	m := runMap{rows: map[string]string{}}
	var labels []string
	i := 1
	for ; i < len(lines) && strings.HasPrefix(lines[i], "  "); i++ {
		r := runMapRow.FindStringSubmatch(lines[i])
		if r == nil {
			t.Fatalf("map line %q is not `  LABEL  VALUE`", lines[i])
		}
		m.rows[r[1]] = r[2]
		labels = append(labels, r[1])
	}
	if strings.Join(labels, "|") != strings.Join(runMapLabels, "|") {
		t.Fatalf("map labels %q, want %q", labels, runMapLabels)
	}
	if i >= len(lines) || !strings.HasPrefix(lines[i], "mcpServers") {
		t.Fatalf("no mcpServers snippet after the map:\n%s", out)
	}
	var snippet []string
	for i++; i < len(lines); i++ {
		snippet = append(snippet, lines[i])
		if lines[i] == "}" {
			break
		}
	}
	m.snippet = strings.Join(snippet, "\n")
	return m
}

// TestRunWholeProduct runs scripts/run.sh, what `make run` serves, on a free
// loopback port and checks its promise to a newcomer: stdout starts with a
// map of where each part is, and every part answers there. The MCP endpoint
// serves the diag, resp, store and actions tools to the static token in the
// named file (0600, never printed) and to an OAuth client that signs up on
// the authorize page (the go-sdk's, given only the snippet's URL); the
// app's API, OpenAPI, WebSocket and the OAuth metadata answer; the resp
// tools reach the disposable redis-server; the store and app files are
// where the map says. SIGINT then stops mcpkit and redis-server and removes
// the temporary directory, keeping the data files.
func TestRunWholeProduct(t *testing.T) {
	data := t.TempDir()
	t.Setenv("MCPKIT_DATA_DIR", data)
	if os.Getenv("MCPKIT_BIN") == "" {
		t.Setenv("MCPKIT_BIN", binary(t))
	}
	stdout := &syncBuffer{}
	p := startBinary(t, runScript(t), nil, stdout, "serve", "--http", "127.0.0.1:0")
	eventually(t, 20*time.Second, "run.sh prints its map", func() bool {
		select {
		case <-p.done:
			t.Fatalf("run.sh exited: %v\nstdout:\n%s\nstderr:\n%s", p.err, stdout.String(), p.stderr.String())
		default:
		}
		return strings.Contains(stdout.String(), "--method tools/list\n")
	})
	m := parseRunMap(t, stdout.String())
	ctx := t.Context()

	// The paths and processes the map and the progress lines name.
	mcpURL := m.rows["MCP"]
	base, ok := strings.CutSuffix(mcpURL, "/mcp")
	if !ok || !regexp.MustCompile(`^http://127\.0\.0\.1:\d+$`).MatchString(base) {
		t.Fatalf("MCP %q is not http://127.0.0.1:PORT/mcp", mcpURL)
	}
	for label, want := range map[string]string{"health": base + "/healthz", "app API": base + "/api", "app OpenAPI": base + "/api/swagger",
		"app WebSocket": "ws" + strings.TrimPrefix(base, "http") + "/ws", "OAuth authorize": base + "/oauth/authorize",
		"OAuth metadata": base + "/.well-known/oauth-authorization-server", "resource metadata": base + "/.well-known/oauth-protected-resource/mcp",
		"store file": filepath.Join(data, "store.db"), "app data file": filepath.Join(data, "actions.db")} {
		if m.rows[label] != want {
			t.Errorf("map %s = %q, want %q", label, m.rows[label], want)
		}
	}
	progress := regexp.MustCompile(`run\.sh: redis-server pid=(\d+) port=(\d+) dir=(\S+)`).FindStringSubmatch(p.stderr.String())
	mcpkitPID := regexp.MustCompile(`run\.sh: mcpkit pid=(\d+)`).FindStringSubmatch(p.stderr.String())
	if progress == nil || mcpkitPID == nil {
		t.Fatalf("run.sh named no redis-server or mcpkit:\n%s", p.stderr.String())
	}
	dir := progress[3]
	if m.rows["redis-server"] != "127.0.0.1:"+progress[2] || progress[2] == "6379" {
		t.Errorf("map redis-server %q, started on port %s (never 6379)", m.rows["redis-server"], progress[2])
	}
	if m.rows["MCP token file"] != filepath.Join(dir, "token") {
		t.Errorf("map token file %q, want in %s", m.rows["MCP token file"], dir)
	}
	fi, err := os.Stat(m.rows["MCP token file"])
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the token file: %v, mode %v, want 0600", err, fi)
	}
	raw, err := os.ReadFile(m.rows["MCP token file"])
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(raw))

	// The snippet is what a client pastes: JSON naming the MCP URL.
	var snippet struct {
		MCPServers map[string]struct{ Type, URL string } `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(m.snippet), &snippet); err != nil || len(snippet.MCPServers) != 1 ||
		snippet.MCPServers["mcpkit"].URL != mcpURL || snippet.MCPServers["mcpkit"].Type != "http" {
		t.Fatalf("mcpServers snippet %s: %+v (%v)", m.snippet, snippet, err)
	}

	// /mcp wants a token; the static one serves every plugin's tools.
	if code, _ := httpDo(t, "POST", mcpURL, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); code != http.StatusUnauthorized {
		t.Fatalf("/mcp without a token: %d, want 401", code)
	}
	cs := connectRun(t, mcpURL, &mcp.StreamableClientTransport{Endpoint: mcpURL, HTTPClient: &http.Client{Transport: bearer{token: token}}, DisableStandaloneSSE: true})
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = true
	}
	for _, want := range []string{"diag_echo", "resp_execute", "resp_session", "store_store", "store_search", "actions_message-post", "actions_status"} {
		if !names[want] {
			t.Errorf("tools/list has no %s (%d tools)", want, len(tools.Tools))
		}
	}
	if got := decode[struct{ Message string }](t, callTool(t, cs, "diag_echo", map[string]any{"message": "hi"})); got.Message != "hi" {
		t.Fatalf("diag_echo = %+v", got)
	}
	reply := decode[execReply](t, callTool(t, cs, "resp_execute", map[string]any{
		"format": "json", "commands": [][]any{{"SET", "run:greeting", "hello"}, {"GET", "run:greeting"}, {"CONFIG", "GET", "port"}},
	}))
	if reply.Outcome != "ok" || len(reply.Replies) != 3 || reply.Replies[1].Str(t) != "hello" || !strings.Contains(mustJSON(t, reply.Replies[2]), `"`+progress[2]+`"`) {
		t.Fatalf("resp_execute against the map's redis-server: %+v", reply)
	}
	callTool(t, cs, "store_store", map[string]any{"collection": "notes", "id": "first", "doc": map[string]any{"text": "hello"}})
	if got := decode[struct{ Doc struct{ Text string } }](t, callTool(t, cs, "store_get", map[string]any{"collection": "notes", "id": "first"})); got.Doc.Text != "hello" {
		t.Fatalf("store_get = %+v", got)
	}
	callTool(t, cs, "actions_message-post", map[string]any{"channel": "run", "text": "hi", "author": "me"})

	// The app's HTTP API, OpenAPI and WebSocket, and /healthz.
	for _, c := range []struct{ url, want string }{
		{m.rows["health"], ""},
		{base + "/api/status", `"name":"example"`},
		{m.rows["app OpenAPI"], `"openapi"`},
		{base + "/api/messages?channel=run", `"text":"hi"`},
	} {
		if code, body := httpDo(t, "GET", c.url, ""); code != http.StatusOK || !strings.Contains(body, c.want) {
			t.Errorf("GET %s: %d %.300s", c.url, code, body)
		}
	}
	wsCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(wsCtx, m.rows["app WebSocket"], nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Write(wsCtx, websocket.MessageText, []byte(`{"messageType":"action","action":"status","messageId":"r1"}`)); err != nil {
		t.Fatal(err)
	}
	if _, got, err := ws.Read(wsCtx); err != nil || !strings.Contains(string(got), `"messageId":"r1"`) {
		t.Fatalf("status over %s: %s (%v)", m.rows["app WebSocket"], got, err)
	}
	ws.Close(websocket.StatusNormalClosure, "")

	// OAuth: the metadata names the map's URLs, and a client given only the
	// snippet's URL discovers, registers and signs up on the authorize page.
	asm, err := oauthex.GetAuthServerMeta(ctx, m.rows["OAuth metadata"], base, http.DefaultClient)
	if err != nil || asm == nil || asm.AuthorizationEndpoint != m.rows["OAuth authorize"] { // nil: not found
		t.Fatalf("authorization server metadata: %+v (%v)", asm, err)
	}
	if prm, err := oauthex.GetProtectedResourceMetadata(ctx, m.rows["resource metadata"], mcpURL, http.DefaultClient); err != nil || prm == nil || prm.Resource != mcpURL {
		t.Fatalf("protected resource metadata: %+v (%v)", prm, err)
	}
	h := sdkOAuthHandler(t, "signup", "run@example.com", m.rows["OAuth authorize"])
	url := snippet.MCPServers["mcpkit"].URL
	oc := connectRun(t, url, &mcp.StreamableClientTransport{Endpoint: url, OAuthHandler: h, DisableStandaloneSSE: true})
	posted := decode[struct {
		Author string `json:"author"`
		UserID int64  `json:"user_id"`
	}](t, callTool(t, oc, "actions_message-post", map[string]any{"channel": "run", "text": "as a user"}))
	if posted.Author != "Ann" || posted.UserID == 0 { // signOnPage signs up as Ann
		t.Fatalf("the OAuth client posted as %+v, want the user who signed up", posted)
	}
	// A developer tries client after client: on loopback, make run raises
	// the registration limit (5 an hour per address in production), and
	// the map says so.
	if m.rows["OAuth register"] != "1000" {
		t.Errorf("map OAuth register = %q, want 1000 (raised on loopback)", m.rows["OAuth register"])
	}
	for i := range 10 {
		if _, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{stoppedRedirect}, ClientName: "try " + strconv.Itoa(i), TokenEndpointAuthMethod: "none"}, http.DefaultClient); err != nil {
			t.Fatalf("registration %d after the go-sdk client's: %v", i+1, err)
		}
	}
	cs.Close()
	oc.Close()
	if strings.Contains(stdout.String()+p.stderr.String(), token) {
		t.Fatal("the static token appears in run.sh's output")
	}

	// Ctrl-C stops everything and removes the temporary directory.
	sig := os.Signal(os.Interrupt)
	if signal.Ignored(os.Interrupt) { // inherited by run.sh, which then cannot trap it
		t.Log("SIGINT is ignored in this process (and so in run.sh): sending SIGTERM, which run.sh traps the same way")
		sig = syscall.SIGTERM
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("run.sh did not exit within 10 s of %v:\n%s", sig, p.stderr.String())
	}
	if p.err != nil {
		t.Fatalf("run.sh exited with %v:\n%s", p.err, p.stderr.String())
	}
	for _, pid := range []string{progress[1], mcpkitPID[1]} {
		n, _ := strconv.Atoi(pid)
		if err := syscall.Kill(n, 0); err != syscall.ESRCH {
			t.Errorf("pid %d (redis-server %s, mcpkit %s) is still there after run.sh exited (kill -0: %v)", n, progress[1], mcpkitPID[1], err)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("run.sh left %s behind (%v)", dir, err)
	}
	if !strings.Contains(p.stderr.String(), "run.sh: redis-server pid="+progress[1]+" stopped") || !strings.Contains(p.stderr.String(), `msg="shut down"`) {
		t.Errorf("run.sh's stderr does not show mcpkit shutting down and redis-server stopped:\n%s", p.stderr.String())
	}
	for _, f := range []string{m.rows["store file"], m.rows["app data file"]} {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			t.Errorf("%s after run.sh: %v", f, err)
		}
	}
}

// connectRun connects an SDK client to run.sh's MCP endpoint through tr.
func connectRun(t *testing.T, url string, tr *mcp.StreamableClientTransport) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "run e2e"}, nil).Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestRunRefusesStdio: run.sh serves HTTP; asked for stdio it says so and
// exits 2 (a bad command line) without starting anything.
func TestRunRefusesStdio(t *testing.T) {
	if os.Getenv("MCPKIT_BIN") == "" {
		t.Setenv("MCPKIT_BIN", binary(t))
	}
	out, err := exec.Command(runScript(t), "serve", "--stdio").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "run.sh serves HTTP only") || strings.Contains(string(out), "redis-server pid=") {
		t.Fatalf("run.sh serve --stdio: %v\n%s", err, out)
	}
}

// TestRunStoppedWhileStarting: a Ctrl-C before mcpkit is ready (the signal
// reaches run.sh as soon as it has started mcpkit) still stops mcpkit and
// redis-server and removes the temporary directory, and prints no map.
func TestRunStoppedWhileStarting(t *testing.T) {
	t.Setenv("MCPKIT_DATA_DIR", t.TempDir())
	if os.Getenv("MCPKIT_BIN") == "" {
		t.Setenv("MCPKIT_BIN", binary(t))
	}
	stdout := &syncBuffer{}
	p := startBinary(t, runScript(t), nil, stdout, "serve", "--http", "127.0.0.1:0")
	started := regexp.MustCompile(`run\.sh: mcpkit pid=(\d+)`)
	eventually(t, 20*time.Second, "run.sh starts mcpkit", func() bool { return started.MatchString(p.stderr.String()) })
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("run.sh did not exit within 10 s of SIGTERM:\n%s", p.stderr.String())
	}
	progress := regexp.MustCompile(`run\.sh: redis-server pid=(\d+) port=\d+ dir=(\S+)`).FindStringSubmatch(p.stderr.String())
	// Its status is mcpkit's, which may have been stopped before it could
	// serve; run.sh itself must exit rather than die of the signal.
	var ee *exec.ExitError
	if p.err != nil && (!errors.As(p.err, &ee) || !ee.Exited()) || progress == nil || stdout.String() != "" {
		t.Fatalf("run.sh stopped while starting: %v, stdout %q\n%s", p.err, stdout.String(), p.stderr.String())
	}
	for _, pid := range []string{progress[1], started.FindStringSubmatch(p.stderr.String())[1]} {
		n, _ := strconv.Atoi(pid)
		if err := syscall.Kill(n, 0); err != syscall.ESRCH {
			t.Errorf("pid %d is still there after run.sh exited (kill -0: %v)", n, err)
		}
	}
	if _, err := os.Stat(progress[2]); !os.IsNotExist(err) {
		t.Errorf("run.sh left %s behind (%v)", progress[2], err)
	}
}

// TestRunScriptFailingServe checks that run.sh passes mcpkit's exit status on
// and still stops its redis-server when mcpkit cannot start.
func TestRunScriptFailingServe(t *testing.T) {
	t.Setenv("MCPKIT_DATA_DIR", t.TempDir()) // never the checkout's data/
	cmd := exec.Command(runScript(t), "serve", "--http", "127.0.0.1:0", "--no-such-flag")
	done := make(chan struct{})
	var (
		out []byte
		err error
	)
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("run.sh did not exit:\n%s", out)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("run.sh with a bad flag: %v, want exit status 2 (bad command line)\n%s", err, out)
	}
	m := regexp.MustCompile(`run\.sh: redis-server pid=(\d+) `).FindSubmatch(out)
	if m == nil || !strings.Contains(string(out), "run.sh: redis-server pid="+string(m[1])+" stopped") {
		t.Fatalf("run.sh did not start and stop redis-server:\n%s", out)
	}
}
