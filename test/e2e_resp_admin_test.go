package test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/mcpkit/mcpkit/internal/redistest"
	"github.com/mcpkit/mcpkit/internal/testcerts"
	"github.com/mcpkit/mcpkit/pkg/resp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The gateway's tokens in these tests, one per role.
const (
	adminViewer   = "e2e-viewer-token-0123456789"
	adminOperator = "e2e-operator-token-0123456789"
	adminAdmin    = "e2e-admin-token-0123456789"
)

// adminGateway is a running `mcpkit resp admin` in front of a disposable
// redis-server.
type adminGateway struct {
	*httpProc
	redis  *redistest.Server
	audit  string
	tokens string // the token file
}

// startAdmin starts redis-server (keyspace notifications on) and the
// gateway in front of it with tokens, an audit file, values revealed to
// operators, and replication export.
func startAdmin(t *testing.T) *adminGateway {
	t.Helper()
	rs := redistest.Start(t, redistest.Options{Password: "e2e-redis-pass", Config: []string{"notify-keyspace-events KEA"}})
	dir := t.TempDir()
	g := &adminGateway{redis: rs, audit: filepath.Join(dir, "audit.jsonl"), tokens: filepath.Join(dir, "tokens")}
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("tokens", "# role token\nviewer "+adminViewer+"\noperator "+adminOperator+"\nadmin "+adminAdmin+"\n")
	pw := write("password", rs.Password)
	cfg := write("admin.json", `{"password_file": "`+pw+`", "tokens_file": "`+g.tokens+`", "audit_file": "`+g.audit+`",
		"reveal": "operator", "replication_export": true, "live": {"max_connections": 4}}`)
	g.httpProc = startListening(t, binary(t), "resp", "--log-format", "json", "admin", "--target", rs.Addr, "--listen", "127.0.0.1:0", "--config", cfg)
	return g
}

// redisDo runs one command on srv through pkg/resp.
func redisDo(t *testing.T, srv *redistest.Server, args ...string) resp.Value {
	t.Helper()
	c, err := resp.Dial(t.Context(), resp.DialOptions{Addr: srv.Addr, Password: srv.Password})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	v, err := c.Do(t.Context(), b...)
	if err != nil || v.IsError() {
		t.Fatalf("%v: %v %s", args, err, v.ErrorText())
	}
	return v
}

// adminReply is one HTTP answer of the gateway.
type adminReply struct {
	status int
	ctype  string
	body   []byte
}

func (g *adminGateway) do(t *testing.T, method, path, token, body string) adminReply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, g.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return adminReply{status: res.StatusCode, ctype: res.Header.Get("Content-Type"), body: b}
}

// TestRespAdminRoutes: every route of the built gateway against a real
// redis-server, with each role; confirmation refusals; the audit file;
// /metrics read by Prometheus's own parser; the OpenAPI document.
func TestRespAdminRoutes(t *testing.T) {
	g := startAdmin(t)
	redisDo(t, g.redis, "SET", "e2e:str", "hello")
	redisDo(t, g.redis, "RPUSH", "e2e:list", "a", "b")
	redisDo(t, g.redis, "CONFIG", "SET", "slowlog-log-slower-than", "0")

	// Every GET route: which roles may read it.
	gets := []struct {
		path     string
		minRole  int // 0 viewer, 1 operator, 2 admin
		contains string
	}{
		{"/api/openapi.json", 0, `"openapi":"3.1.0"`},
		{"/api/info", 0, `"redis_version"`},
		{"/api/info?section=keyspace", 0, `"db0"`},
		{"/api/keys?count=100", 0, `"e2e:list"`},
		{"/api/keys/e2e:str", 0, `"type":"string"`},
		{"/api/clients", 0, `"addr"`},
		{"/api/slowlog?count=10", 0, `"duration_us"`},
		{"/api/latency", 0, `"events"`},
		{"/api/memory", 0, `"peak.allocated"`},
		{"/api/config?pattern=maxmemory*", 0, `"maxmemory"`},
		{"/api/audit", 1, `"entries"`},
		{"/metrics", 0, "redis_up 1"},
	}
	tokens := []string{adminViewer, adminOperator, adminAdmin}
	for _, gr := range gets {
		if r := g.do(t, "GET", gr.path, "", ""); r.status != 401 {
			t.Errorf("%s without a token: %d", gr.path, r.status)
		}
		for role, tok := range tokens {
			r := g.do(t, "GET", gr.path, tok, "")
			switch {
			case role < gr.minRole && r.status != 403:
				t.Errorf("%s as role %d: %d, want 403", gr.path, role, r.status)
			case role >= gr.minRole && (r.status != 200 || !strings.Contains(string(r.body), gr.contains)):
				t.Errorf("%s as role %d: %d %.300s", gr.path, role, r.status, r.body)
			}
		}
	}
	// The reveal rule: viewers never see values, operators do.
	if r := g.do(t, "GET", "/api/keys/e2e:str", adminViewer, ""); !strings.Contains(string(r.body), `"value_hidden":true`) || strings.Contains(string(r.body), "hello") {
		t.Errorf("viewer sees a value: %s", r.body)
	}
	if r := g.do(t, "GET", "/api/keys/e2e:str", adminOperator, ""); !strings.Contains(string(r.body), `"value":"hello"`) {
		t.Errorf("operator: %s", r.body)
	}
	if r := g.do(t, "GET", "/api/keys?reveal=true", adminViewer, ""); r.status != 403 {
		t.Errorf("viewer reveal: %d", r.status)
	}
	if r := g.do(t, "GET", "/api/config?pattern=requirepass", adminAdmin, ""); strings.Contains(string(r.body), g.redis.Password) || !strings.Contains(string(r.body), `"***"`) {
		t.Errorf("secret config: %s", r.body)
	}

	// POSTs: roles, confirmation, and the audit file.
	posts := []struct {
		token, path, body string
		status            int
		outcome           string
	}{
		{adminViewer, "/api/config", `{"parameter":"maxmemory-policy","value":"allkeys-lru"}`, 403, "refused"},
		{adminOperator, "/api/config", `{"parameter":"maxmemory-policy","value":"allkeys-lru"}`, 200, "ok"},
		{adminOperator, "/api/storage/action", `{"action":"bgsave"}`, 200, "ok"},
		{adminOperator, "/api/storage/action", `{"action":"flushdb"}`, 409, "refused"},
		{adminOperator, "/api/storage/action", `{"action":"flushall","confirmed":true}`, 403, "refused"},
		{adminAdmin, "/api/storage/action", `{"action":"slowlog_reset","confirmed":true}`, 200, "ok"},
	}
	for _, p := range posts {
		if r := g.do(t, "POST", p.path, p.token, p.body); r.status != p.status {
			t.Errorf("POST %s %s: %d %s, want %d", p.path, p.body, r.status, r.body, p.status)
		}
	}
	if v := redisDo(t, g.redis, "CONFIG", "GET", "maxmemory-policy"); string(v.Elems[1].Str) != "allkeys-lru" {
		t.Errorf("maxmemory-policy %q", v.Elems[1].Str)
	}
	if v := redisDo(t, g.redis, "EXISTS", "e2e:str"); v.Int != 1 {
		t.Error("an unconfirmed flushdb flushed")
	}
	data, err := os.ReadFile(g.audit)
	if err != nil {
		t.Fatal(err)
	}
	// Every POST, every refusal (the GETs without a token: 401s), and the
	// reads that revealed a value are recorded, in order.
	type auditLine struct {
		Time    time.Time
		Who     string
		Role    string
		Method  string
		Path    string
		Action  string
		Outcome string
		Status  int
	}
	var lines []string
	var unauthenticated, revealed, revealRefused int
	for l := range strings.Lines(strings.TrimSpace(string(data))) {
		var e auditLine
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		switch {
		case e.Method == "POST":
			lines = append(lines, l)
		case e.Status == 401 && e.Who == "unauthenticated" && e.Outcome == "refused":
			unauthenticated++
		case e.Action == "reveal" && e.Outcome == "ok" && e.Path == "/api/keys/{key}":
			revealed++
		case e.Action == "reveal" && e.Status == 403 && e.Role == "viewer":
			revealRefused++
		}
	}
	if unauthenticated != len(gets) || revealed != 3 || revealRefused != 1 {
		t.Errorf("audit: %d 401s (want %d), %d revealed reads (want 3), %d refused reveals (want 1):\n%s",
			unauthenticated, len(gets), revealed, revealRefused, data)
	}
	if len(lines) != len(posts) {
		t.Fatalf("%d audit lines for %d POSTs:\n%s", len(lines), len(posts), data)
	}
	for i, p := range posts {
		var e auditLine
		if err := json.Unmarshal([]byte(lines[i]), &e); err != nil {
			t.Fatal(err)
		}
		if e.Outcome != p.outcome || e.Status != p.status || e.Path != p.path || !strings.HasPrefix(e.Who, "token:") || time.Since(e.Time) > time.Minute {
			t.Errorf("audit line %d: %s", i, lines[i])
		}
	}
	for _, tok := range tokens {
		if bytes.Contains(data, []byte(tok)) {
			t.Fatal("a token in the audit file")
		}
	}

	// /metrics through Prometheus's parser.
	r := g.do(t, "GET", "/metrics", adminViewer, "")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	if fams["redis_up"].GetMetric()[0].GetGauge().GetValue() != 1 || fams["redis_db_keys"].GetMetric()[0].GetGauge().GetValue() != 2 {
		t.Fatalf("metrics: up %v keys %v", fams["redis_up"], fams["redis_db_keys"])
	}
	if fams["redis_total_commands_processed"].GetMetric()[0].GetCounter().GetValue() < 1 {
		t.Fatal("redis_total_commands_processed")
	}
}

// wantAudit fails the test unless a line of the gateway's audit file
// contains each of parts.
func (g *adminGateway) wantAudit(t *testing.T, parts ...string) {
	t.Helper()
	data, err := os.ReadFile(g.audit)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if !strings.Contains(string(data), p) {
			t.Errorf("no audit line with %s:\n%s", p, data)
		}
	}
}

// TestRespAdminLive: the built gateway's /api/live WebSocket.
func TestRespAdminLive(t *testing.T) {
	g := startAdmin(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	dial := func(token, query string) (*websocket.Conn, int) {
		c, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(g.base, "http")+"/api/live"+query,
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
		if err != nil {
			return nil, res.StatusCode
		}
		t.Cleanup(func() { c.CloseNow() })
		return c, 101
	}
	if _, st := dial(adminOperator, "?monitor=true"); st != 403 {
		t.Fatalf("operator monitor: %d", st)
	}
	c, _ := dial(adminAdmin, "?monitor=true&interval_ms=200")
	var seen = map[string]bool{}
	for !seen["overview"] || !seen["keyspace"] || !seen["monitor"] || !seen["info_delta"] {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("seen %v: %v", seen, err)
		}
		var f map[string]any
		json.Unmarshal(b, &f)
		typ, _ := f["type"].(string)
		switch typ {
		case "overview":
			redisDo(t, g.redis, "SET", "live:e2e", "1")
		case "keyspace":
			if f["channel"] != "__keyspace@0__:live:e2e" {
				continue
			}
		case "monitor":
			if !strings.Contains(strings.ToLower(f["line"].(string)), `"set" "live:e2e"`) {
				continue
			}
		case "error", "dropped":
			t.Fatalf("frame %s", b)
		}
		seen[typ] = true
	}
	// MONITOR is audited, refused and served, before its first frame.
	g.wantAudit(t, `"role":"operator","method":"GET","path":"/api/live","action":"monitor","outcome":"refused","status":403`,
		`"role":"admin","method":"GET","path":"/api/live","action":"monitor","outcome":"ok","status":200`)
}

// TestRespAdminListen: without tokens the gateway refuses to listen
// beyond loopback, as `mcpkit serve` does.
func TestRespAdminListen(t *testing.T) {
	rs := redistest.Start(t, redistest.Options{})
	out, err := exec.Command(binary(t), "resp", "admin", "--target", rs.Addr, "--listen", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "non-loopback listen address needs authentication") {
		t.Fatalf("listen beyond loopback without tokens: %v\n%s", err, out)
	}
	out, err = exec.Command(binary(t), "resp", "admin", "--target", rs.Addr).CombinedOutput()
	if code := exitCode(err); code != 2 || !strings.Contains(string(out), "--listen") {
		t.Fatalf("no --listen: exit %d\n%s", code, out)
	}
}

// exitCode is a finished command's exit code (0 when err is nil).
func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestRespAdminSnapshotThroughTool: an RDB snapshot taken by the gateway
// over the replication protocol, downloaded by the sidecar's management
// tool into file_root, loaded by a fresh redis-server, which then holds
// the same keys.
func TestRespAdminSnapshotThroughTool(t *testing.T) {
	g := startAdmin(t)
	redisDo(t, g.redis, "SET", "snap:a", "alpha")
	redisDo(t, g.redis, "HSET", "snap:h", "f", "v")
	redisDo(t, g.redis, "RPUSH", "snap:l", "1", "2", "3")
	root := t.TempDir()
	tok := filepath.Join(t.TempDir(), "mgmt-token")
	if err := os.WriteFile(tok, []byte(adminAdmin+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := respConfig(t, g.redis, map[string]any{"management_url": g.base, "management_token_file": tok}, map[string]any{"file_root": root})
	cs := startResp(t, nil, "--config", cfg)

	out, isErr := call(t, cs, "resp_management", map[string]any{"path": "/api/replication/snapshot", "download_path": "snap.rdb"})
	var r struct {
		Status   int
		Download struct {
			Path   string
			Bytes  int64
			SHA256 string
		}
	}
	if err := json.Unmarshal(out, &r); err != nil || isErr || r.Status != 200 {
		t.Fatalf("download: %s", out)
	}
	data, err := os.ReadFile(filepath.Join(root, "snap.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if r.Download.Bytes != int64(len(data)) || r.Download.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("download %+v, file %d bytes", r.Download, len(data))
	}
	if chk, err := exec.Command("redis-check-rdb", r.Download.Path).CombinedOutput(); err != nil {
		t.Fatalf("redis-check-rdb: %v\n%s", err, chk)
	}
	g.wantAudit(t, `"role":"admin","method":"GET","path":"/api/replication/snapshot","action":"snapshot","outcome":"ok","status":200`)
	// A second download to the same file is refused before sending.
	if out, isErr := call(t, cs, "resp_management", map[string]any{"path": "/api/replication/snapshot", "download_path": "snap.rdb"}); !isErr || !strings.Contains(string(out), "bad_params") {
		t.Fatalf("existing file: %s", out)
	}

	fresh := redistest.Start(t, redistest.Options{Config: []string{"dbfilename restored.rdb"}})
	fresh.Stop()
	if err := os.WriteFile(filepath.Join(fresh.Dir, "restored.rdb"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Restart(); err != nil {
		t.Fatal(err)
	}
	if v := redisDo(t, fresh, "GET", "snap:a"); string(v.Str) != "alpha" {
		t.Fatalf("snap:a = %q", v.Str)
	}
	if v := redisDo(t, fresh, "HGET", "snap:h", "f"); string(v.Str) != "v" {
		t.Fatalf("snap:h.f = %q", v.Str)
	}
	if v := redisDo(t, fresh, "LRANGE", "snap:l", "0", "-1"); len(v.Elems) != 3 {
		t.Fatalf("snap:l = %v", v.Elems)
	}
	if v := redisDo(t, fresh, "DBSIZE"); v.Int != 3 {
		t.Fatalf("dbsize %d", v.Int)
	}

	// The live tool reaches the same gateway with the same token, narrowed
	// to commandstats: open returns the overview, receive does not repeat
	// it, and a delta carries the moved counters of cmdstat_set only.
	out, isErr = call(t, cs, "resp_management_live", map[string]any{"action": "open", "query": "keyspace=false&interval_ms=100", "sections": []string{"commandstats"}})
	var open struct {
		Handle   string `json:"handle"`
		Overview struct {
			Value struct {
				Type string                    `json:"type"`
				Info map[string]map[string]any `json:"info"`
			} `json:"value"`
		} `json:"overview"`
	}
	if err := json.Unmarshal(out, &open); isErr || err != nil || open.Overview.Value.Type != "overview" || len(open.Overview.Value.Info) != 1 || open.Overview.Value.Info["commandstats"] == nil {
		t.Fatalf("live open: %s", out)
	}
	redisDo(t, g.redis, "SET", "live:tool", "1")
	for deadline := time.Now().Add(10 * time.Second); ; {
		out, isErr = call(t, cs, "resp_management_live", map[string]any{"action": "receive", "handle": open.Handle, "max_bytes": 1024, "wait_ms": 1000})
		var r struct {
			Frames []struct {
				Value struct {
					Type    string                    `json:"type"`
					Changed map[string]map[string]any `json:"changed"`
				} `json:"value"`
			} `json:"frames"`
		}
		if err := json.Unmarshal(out, &r); isErr || err != nil {
			t.Fatalf("live receive: %s", out)
		}
		var set map[string]any
		for _, f := range r.Frames {
			if f.Value.Type != "info_delta" {
				t.Fatalf("live receive (the overview is not repeated): %s", out)
			}
			if c, ok := f.Value.Changed["commandstats.cmdstat_set"]; ok {
				set = c
			}
		}
		if set != nil {
			if set["calls"] == nil || set["failed_calls"] != nil {
				t.Fatalf("cmdstat_set delta (the moved counters only): %v", set)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no cmdstat_set delta: %s", out)
		}
	}
	if out, isErr := call(t, cs, "resp_management_live", map[string]any{"action": "open", "sections": []string{"nosuchsection"}}); !isErr || !strings.Contains(string(out), "bad_params") {
		t.Fatalf("unknown section: %s", out)
	}
}

// TestRespAdminTLS: the gateway reaches a TLS-only redis-server with its
// configured CA, serves HTTPS with its configured certificate, and the
// management tools verify it with the target's management_ca_cert (and
// refuse it without).
func TestRespAdminTLS(t *testing.T) {
	rs := redistest.Start(t, redistest.Options{TLS: true})
	certs, err := testcerts.Write(filepath.Join(t.TempDir(), "tls"), "mcpkit-e2e-admin")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	tok := filepath.Join(dir, "token")
	os.WriteFile(tokens, []byte("viewer "+adminViewer+"\n"), 0o600)
	os.WriteFile(tok, []byte(adminViewer), 0o600)
	cfg := writeConfig(t, `{"tokens_file": "`+tokens+`", "tls_cert_file": "`+certs.CertFile+`", "tls_key_file": "`+certs.KeyFile+`",
		"tls": {"ca_cert": "`+rs.CAFile+`"}}`)
	gw := startListening(t, binary(t), "resp", "--log-format", "json", "admin", "--target", rs.Addr, "--listen", "127.0.0.1:0", "--config", cfg)
	if !strings.HasPrefix(gw.base, "https://") {
		t.Fatalf("base %s", gw.base)
	}
	verified := respConfig(t, rs, map[string]any{"tls": map[string]any{"ca_cert": rs.CAFile}, "management_url": gw.base, "management_token_file": tok, "management_ca_cert": certs.CAFile}, nil)
	cs := startResp(t, nil, "--config", verified)
	if out, isErr := call(t, cs, "resp_management", map[string]any{"path": "/api/info?section=server"}); isErr || !strings.Contains(string(out), `"status":200`) || !strings.Contains(string(out), `"redis_version"`) {
		t.Fatalf("over TLS: %s", out)
	}
	if out, isErr := call(t, cs, "resp_management_live", map[string]any{"action": "open"}); isErr || !strings.Contains(string(out), `"type":"overview"`) {
		t.Fatalf("live over TLS: %s", out)
	}
	unverified := respConfig(t, rs, map[string]any{"tls": map[string]any{"ca_cert": rs.CAFile}, "management_url": gw.base, "management_token_file": tok}, nil)
	cs2 := startResp(t, nil, "--config", unverified)
	if out, isErr := call(t, cs2, "resp_management", map[string]any{"path": "/api/info"}); !isErr || !strings.Contains(string(out), "certificate") {
		t.Fatalf("without the CA: %s", out)
	}
}
